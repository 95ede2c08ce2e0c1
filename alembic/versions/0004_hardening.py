"""hardening: idempotency keys, refit job heartbeats, withdrawn decisions, no drafter secrets

- ``idempotency_keys``: the first answer to each (tenant, Idempotency-Key).
- ``refit_jobs``: ``heartbeat_at`` and ``worker``; jobs a previous version left
  ``running`` are marked ``failed`` (nothing runs them any more).
- ``decisions.failure``: why a decision was withdrawn (status ``failed``).
- ``agents.head``: what a plan changes of an agent's engine (its clock and the
  log's head), so a plan no longer rewrites the whole running state.
- agents' drafter settings lose ``api_base`` and ``api_key`` (LLM endpoints
  and keys are the operator's configuration now) and gain ``provider`` (unset:
  the tenant picks one before drafting on the server again).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

agents = sa.table("agents", sa.column("id", sa.String), sa.column("settings", sa.JSON))
refit_jobs = sa.table(
    "refit_jobs",
    sa.column("status", sa.String),
    sa.column("error", sa.Text),
    sa.column("finished_at", sa.DateTime(timezone=True)),
)
decisions = sa.table("decisions", sa.column("status", sa.String))


def _settings(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value)


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("method", sa.String(length=8), nullable=False),
        sa.Column("path", sa.String(length=300), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("response", sa.Text(), nullable=True),
        sa.Column("agent_id", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("tenant_id", "key"),
    )
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.create_index("ix_idempotency_keys_agent_id", ["agent_id"], unique=False)
        batch_op.create_index("ix_idempotency_keys_created_at", ["created_at"], unique=False)
    with op.batch_alter_table("refit_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("worker", sa.String(length=64), nullable=True))
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("failure", sa.Text(), nullable=True))
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.add_column(sa.Column("head", sa.Text(), nullable=True))
    connection = op.get_bind()
    connection.execute(
        sa.update(refit_jobs)
        .where(refit_jobs.c.status == "running")
        .values(
            status="failed",
            error="interrupted: the server was upgraded while the job ran",
            finished_at=dt.datetime.now(dt.UTC),
        )
    )
    for agent_id, settings in connection.execute(sa.select(agents.c.id, agents.c.settings)).all():
        values = _settings(settings)
        drafter = values.get("drafter")
        if drafter:
            values["drafter"] = {
                "provider": None,
                **{k: v for k, v in drafter.items() if k not in ("api_base", "api_key")},
            }
            connection.execute(sa.update(agents).where(agents.c.id == agent_id).values(settings=values))


def downgrade() -> None:
    connection = op.get_bind()
    heads = sa.table("agents", sa.column("id", sa.String), sa.column("state", sa.Text), sa.column("head", sa.Text))
    for agent_id, state, head in connection.execute(
        sa.select(heads.c.id, heads.c.state, heads.c.head).where(heads.c.head.is_not(None))
    ).all():
        merged = json.loads(state)  # fold what plans changed back into the running state
        moved = json.loads(head)
        merged["clock"] = moved["clock"]
        merged["gate"]["log_length"], merged["gate"]["log_head"] = moved["log_length"], moved["log_head"]
        connection.execute(
            sa.update(heads)
            .where(heads.c.id == agent_id)
            .values(state=json.dumps(merged, sort_keys=True, separators=(",", ":"), allow_nan=False))
        )
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.drop_column("head")
    for agent_id, settings in connection.execute(sa.select(agents.c.id, agents.c.settings)).all():
        values = _settings(settings)
        drafter = values.get("drafter")
        if drafter:
            values["drafter"] = {"api_base": None, **{k: v for k, v in drafter.items() if k != "provider"}}
            connection.execute(sa.update(agents).where(agents.c.id == agent_id).values(settings=values))
    connection.execute(sa.update(decisions).where(decisions.c.status == "failed").values(status="planned"))
    connection.execute(sa.update(refit_jobs).where(refit_jobs.c.status == "queued").values(status="running"))
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.drop_column("failure")
    with op.batch_alter_table("refit_jobs", schema=None) as batch_op:
        batch_op.drop_column("worker")
        batch_op.drop_column("heartbeat_at")
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.drop_index("ix_idempotency_keys_created_at")
        batch_op.drop_index("ix_idempotency_keys_agent_id")
    op.drop_table("idempotency_keys")
