"""external ids: an experience may carry the id it has in the agent's own memory store

- ``experiences.external_id``: the id of the experience in the client's memory
  store (a Mem0 memory, a LangGraph store key, a row of its vector database),
  unique per agent; null for experiences that live only here.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("experiences", schema=None) as batch_op:
        batch_op.add_column(sa.Column("external_id", sa.String(length=200), nullable=True))
        batch_op.create_index("ux_experiences_agent_external", ["agent_id", "external_id"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("experiences", schema=None) as batch_op:
        batch_op.drop_index("ux_experiences_agent_external")
        batch_op.drop_column("external_id")
