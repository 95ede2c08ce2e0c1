"""history rows: log entries and engine records become append-only rows; agents keep a compact state

Every agent's version-1 state (its whole history inside one JSON column) is
split: the hash-chained log moves to ``log_entries`` (one row per entry,
payload byte-for-byte as hashed), the engine records of open decisions move
to their ``decisions`` rows, and ``agents.state`` keeps the version-2 running
state (learner and gate statistics, the fallback's sums, the log's head).
The downgrade rebuilds the version-1 state from the rows.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

agents = sa.table(
    "agents",
    sa.column("id", sa.String),
    sa.column("state", sa.Text),
    sa.column("state_version", sa.Integer),
    sa.column("settings", sa.JSON),
)
decisions = sa.table(
    "decisions",
    sa.column("id", sa.String),
    sa.column("agent_id", sa.String),
    sa.column("status", sa.String),
    sa.column("seq", sa.Integer),
    sa.column("engine_plan", sa.Text),
    sa.column("engine_decision", sa.Text),
)
contributions = sa.table(
    "contributions",
    sa.column("agent_id", sa.String),
    sa.column("decision_id", sa.String),
    sa.column("experience_id", sa.String),
    sa.column("contribution", sa.Float),
    sa.column("seq", sa.Integer),
)
log_entries = sa.table(
    "log_entries",
    sa.column("agent_id", sa.String),
    sa.column("entry_index", sa.Integer),
    sa.column("kind", sa.String),
    sa.column("decision_id", sa.String),
    sa.column("payload", sa.Text),
    sa.column("prev_hash", sa.String),
    sa.column("hash", sa.String),
    sa.column("score", sa.Float),
    sa.column("statistic", sa.Float),
    sa.column("created_at", sa.DateTime(timezone=True)),
)


def upgrade() -> None:
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("engine_plan", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("engine_decision", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("engine_settlement", sa.Text(), nullable=True))
        batch_op.create_index("ix_decisions_agent_status_seq", ["agent_id", "status", "seq"], unique=False)
    with op.batch_alter_table("contributions", schema=None) as batch_op:
        batch_op.create_index("ix_contributions_agent_seq", ["agent_id", "seq"], unique=False)
    op.create_table(
        "log_entries",
        sa.Column("agent_id", sa.String(length=32), nullable=False),
        sa.Column("entry_index", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("decision_id", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("prev_hash", sa.String(length=64), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("statistic", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("agent_id", "entry_index"),
    )
    connection = op.get_bind()
    for agent_id, state in connection.execute(sa.select(agents.c.id, agents.c.state)).all():
        _split_state(connection, agent_id, json.loads(state))


def _split_state(connection: sa.Connection, agent_id: str, state: dict[str, Any]) -> None:
    from memtrial.engine.history import InMemoryHistory
    from memtrial.engine.lifecycle import MemTrial
    from memtrial.trust.gate import GateStatistics, GateTest
    from memtrial.trust.log import canonical_json

    if state["version"] != 1:
        return
    engine = MemTrial.from_dict(state, embeddings={})  # only the history is read: the embeddings stay in their rows
    history = engine.history
    assert isinstance(history, InMemoryHistory)
    test = engine.gate.config.test
    running = GateStatistics(engine.gate.config.bets)
    rows = []
    for entry in history.log:
        score = entry.payload.get("score") if entry.kind == "score" else None
        statistic = None
        if score is not None:
            running.add(float(score))
            if test is GateTest.PREQUENTIAL:
                statistic = running.p_value()
            elif test is GateTest.ANYTIME:
                statistic = math.exp(running.log_e_value())
        rows.append(
            {
                "agent_id": agent_id,
                "entry_index": entry.index,
                "kind": entry.kind,
                "decision_id": str(entry.payload.get("date")),
                "payload": canonical_json(entry.payload),
                "prev_hash": entry.prev_hash,
                "hash": entry.hash,
                "score": score,
                "statistic": statistic,
                "created_at": _now(),
            }
        )
    for start in range(0, len(rows), 500):
        connection.execute(sa.insert(log_entries), rows[start : start + 500])
    for decision_id, entry in history.entries.items():
        connection.execute(
            sa.update(decisions)
            .where(decisions.c.id == decision_id, decisions.c.agent_id == agent_id)
            .values(
                engine_plan=canonical_json(entry.plan.to_dict()),
                engine_decision=None if entry.decision is None else canonical_json(entry.decision.to_dict()),
            )
        )
    engine.history = InMemoryHistory()
    compact = engine.to_json(embeddings=False, history=False)
    connection.execute(
        sa.update(agents).where(agents.c.id == agent_id).values(state=compact, state_version=agents.c.state_version + 1)
    )


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


#: What a version-1 state can hold: the release at revision 0002 reads only these configuration keys (another
#: one stops it), these choices of each, and these log entries (a withdrawal is rebuilt as a pending registration).
V1_CONFIG_KEYS = frozenset(
    {"k", "design", "learner", "gate", "fallback", "investor", "gamma", "fee_bp", "n_components"}
)
V1_CHOICES = {
    "design": ("half", "full"),
    "learner": ("identity", "content", "auto"),
    "fallback": ("ftrl", "ens", "ref", "uniform"),
}
V1_LOG_KINDS = frozenset({"prediction", "score", "withdrawal"})


def _beyond_v1(connection: sa.Connection, agent_id: str, settings: Any, state: dict[str, Any]) -> list[str]:
    """What of an agent the release at revision 0002 cannot hold (empty: its version-1 state is faithful)."""
    beyond = []
    if isinstance(settings, str):
        settings = json.loads(settings)
    if settings.get("kind", "portfolio") != "portfolio":
        beyond.append(f"kind {settings['kind']!r}")
    config = state["config"]
    beyond += [f"{key} {config[key]!r}" for key in sorted(config) if key not in V1_CONFIG_KEYS | {"diagnostics"}]
    beyond += [f"{key} {config[key]!r}" for key, known in V1_CHOICES.items() if config.get(key) not in known]
    kinds = connection.execute(
        sa.select(log_entries.c.kind).where(log_entries.c.agent_id == agent_id).distinct()
    ).scalars()
    beyond += [f"{kind!r} log entries" for kind in sorted(set(kinds) - V1_LOG_KINDS)]
    return beyond


def _check_v1(connection: sa.Connection) -> None:
    """Refuse the downgrade, before it changes anything, when an agent uses what version 1 cannot hold: the
    release at revision 0002 would stop on its state, or read it as another configuration."""
    found = [
        f"agent {agent_id} ({', '.join(beyond)})"
        for agent_id, settings, state in connection.execute(sa.select(agents.c.id, agents.c.settings, agents.c.state))
        if (beyond := _beyond_v1(connection, agent_id, settings, json.loads(state)))
    ]
    if found:
        shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
        raise RuntimeError(
            f"cannot downgrade below revision 0003: {len(found)} agent{'s' if len(found) > 1 else ''} use"
            f"{'' if len(found) > 1 else 's'} what the release at revision 0002 cannot hold, so it could not read "
            f"{'their states' if len(found) > 1 else 'its state'} back: {shown}. Nothing was changed; delete those "
            "agents (DELETE /v1/agents/{id}) to downgrade without them"
        )


def downgrade() -> None:
    connection = op.get_bind()
    _check_v1(connection)
    for agent_id, state in connection.execute(sa.select(agents.c.id, agents.c.state)).all():
        connection.execute(
            sa.update(agents)
            .where(agents.c.id == agent_id)
            .values(
                state=json.dumps(
                    _v1_state(connection, agent_id, json.loads(state)),
                    sort_keys=True,
                    separators=(",", ":"),
                    allow_nan=False,
                ),
                state_version=agents.c.state_version + 1,
            )
        )
    op.drop_table("log_entries")
    with op.batch_alter_table("contributions", schema=None) as batch_op:
        batch_op.drop_index("ix_contributions_agent_seq")
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.drop_index("ix_decisions_agent_status_seq")
        batch_op.drop_column("engine_settlement")
        batch_op.drop_column("engine_decision")
        batch_op.drop_column("engine_plan")


def _v1_pearson(predicted: list[float], realised: list[float]) -> float | None:
    """The prequential score exactly as version 1 computed it (a dot product of centred vectors)."""
    import numpy as np

    x = np.asarray(predicted, dtype=np.float64)
    y = np.asarray(realised, dtype=np.float64)
    if x.size < 2 or np.ptp(x) == 0.0 or np.ptp(y) == 0.0:
        return None
    x = x - x.mean()
    y = y - y.mean()
    return float(np.clip(float(x @ y / np.sqrt((x @ x) * (y @ y))), -1.0, 1.0))


def _v1_state(connection: sa.Connection, agent_id: str, state: dict[str, Any]) -> dict[str, Any]:
    """The version-1 state of an agent, rebuilt from its compact state and its rows."""

    log = [
        {"index": index, "kind": kind, "payload": json.loads(payload), "prev_hash": prev_hash, "hash": hash_}
        for index, kind, payload, prev_hash, hash_ in connection.execute(
            sa.select(
                log_entries.c.entry_index,
                log_entries.c.kind,
                log_entries.c.payload,
                log_entries.c.prev_hash,
                log_entries.c.hash,
            )
            .where(log_entries.c.agent_id == agent_id)
            .order_by(log_entries.c.entry_index)
        )
    ]
    records = [
        [decision_id, experience_id, contribution]
        for decision_id, experience_id, contribution in connection.execute(
            sa.select(contributions.c.decision_id, contributions.c.experience_id, contributions.c.contribution)
            .where(contributions.c.agent_id == agent_id)
            .order_by(contributions.c.seq)
        )
    ]
    entries = [
        {"plan": json.loads(plan), "decision": None if decision is None else json.loads(decision), "settlement": None}
        for plan, decision in connection.execute(
            sa.select(decisions.c.engine_plan, decisions.c.engine_decision)
            .where(
                decisions.c.agent_id == agent_id, decisions.c.status != "settled", decisions.c.engine_plan.is_not(None)
            )
            .order_by(decisions.c.seq)
        )
    ]
    predictions: dict[Any, dict[str, Any]] = {}
    scores, score_dates, scored_dates = [], [], []
    auto = state["config"]["learner"] == "auto"
    auto_scores: dict[str, list[float]] = {"identity": [], "content": []}
    for item in log:
        payload = item["payload"]
        if item["kind"] == "prediction":
            predictions[payload["date"]] = payload
            continue
        if item["kind"] != "score":  # a withdrawal: version 1 leaves such a registration pending
            continue
        date = payload["date"]
        scored_dates.append(date)
        registered = predictions.pop(date)
        if payload["score"] is not None:
            scores.append(payload["score"])
            score_dates.append(date)
        if auto and "details" in registered:
            realised = [value for _, value in payload["realised"]]
            for mode, predicted in registered["details"]["modes"].items():
                value = _v1_pearson(predicted, realised)
                if value is not None:
                    auto_scores[mode].append(value)
    config = {key: value for key, value in state["config"].items() if key != "diagnostics"}
    return {
        "embeddings_included": state["embeddings_included"],
        "version": 1,
        "config": config,
        "gate_hash": state["gate_hash"],
        "clock": state["clock"],
        "experiences": state["experiences"],
        "entries": entries,
        "records": records,
        "auto_scores": auto_scores,
        "gate": {
            "pending": [[date, payload["predictions"]] for date, payload in predictions.items()],
            "scores": scores,
            "score_dates": score_dates,
            "scored_dates": sorted(scored_dates, key=str),
            "log": log,
        },
        "fallback": state["fallback"],
    }
