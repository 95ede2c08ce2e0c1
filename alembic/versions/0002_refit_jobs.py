"""refit jobs: background full-Bayes refits and their posteriors

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "refit_jobs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("agent_id", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("method", sa.String(length=8), nullable=False),
        sa.Column("state_version", sa.Integer(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("refit_jobs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_refit_jobs_agent_id"), ["agent_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("refit_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_refit_jobs_agent_id"))
    op.drop_table("refit_jobs")
