"""state checkpoints: where a correction's replay starts

- ``checkpoints``: an agent's engine state at a log position (learner and gate statistics, the
  predictions a correction derived again for plans awaiting a score), the newest few per agent
  (:mod:`memtrial.engine.checkpoints`), so a correction replays from the last one before the corrected score.
- ``ix_log_entries_agent_decision``: a decision's log entries by id (a correction finds its score entry).

Revision ID: 0008
Revises: 0006
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "checkpoints",
        sa.Column("agent_id", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("agent_id", "position"),
    )
    with op.batch_alter_table("log_entries", schema=None) as batch_op:
        batch_op.create_index("ix_log_entries_agent_decision", ["agent_id", "decision_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("log_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_log_entries_agent_decision")
    op.drop_table("checkpoints")
