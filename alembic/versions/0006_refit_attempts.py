"""refits on a distributed engine: attempts, and the records a job fits

- ``refit_jobs.attempts``: how many times the job was submitted again after the process running it
  stopped beating (a job is resubmitted up to a bound, then failed).
- ``refit_jobs.through_seq``: the last contribution record the job fits (the agent's records as of the
  moment it was queued), so a job run anywhere, and again, fits the same data.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("refit_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("through_seq", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("refit_jobs", schema=None) as batch_op:
        batch_op.drop_column("through_seq")
        batch_op.drop_column("attempts")
