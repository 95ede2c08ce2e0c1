"""leases of server drafting: a claim and a planned decision held by a running request expire

- ``idempotency_keys.lease_until``: when a key claimed across several transactions (server drafting)
  stops being in progress unless its request renews it; past it a retry with the key runs again.
- ``idempotency_keys.holder``: the request holding the claim (a random token), so a request whose
  claim was taken over never stores its answer or releases the new holder's claim.
- ``decisions.drafting_until``: when a server-drafted decision still planned is withdrawn (status
  ``failed``) unless the request drafting it renews it; cleared once it is decided or withdrawn.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("holder", sa.String(length=32), nullable=True))
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("drafting_until", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index("ix_decisions_drafting_until", ["drafting_until"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.drop_index("ix_decisions_drafting_until")
        batch_op.drop_column("drafting_until")
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.drop_column("holder")
        batch_op.drop_column("lease_until")
