"""An agent's history in database rows: the engine's :class:`~memtrial.engine.history.History` for the service.

Each decision is one ``decisions`` row whose engine columns are written once
per stage (plan, decision, settlement); each log entry is one
``log_entries`` row; each contribution one ``contributions`` row. Nothing is
rewritten, so a request writes the same number of bytes after ten decisions
or ten thousand. State checkpoints (:mod:`memtrial.engine.checkpoints`) are
``checkpoints`` rows, the newest few per agent.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from memtrial.engine.checkpoints import Checkpoint
from memtrial.engine.history import DecisionEntry
from memtrial.records import Decision as CoreDecision
from memtrial.records import ExperienceId, Plan, Settlement
from memtrial.trust.log import LogEntry, LogKind, canonical_json
from service.models import Agent, CheckpointRow, Contribution, Decision, LogRow
from service.modes import DecisionStatus

__all__ = ["LOG_PAGE", "SqlHistory", "log_entry_of", "read_log"]

LOG_PAGE = 1000


def log_entry_of(row: LogRow) -> LogEntry:
    return LogEntry(row.index, row.kind, json.loads(row.payload), row.prev_hash, row.hash)


def read_log(session: Session, agent_id: str, start: int = 0, limit: int | None = None) -> Iterator[LogEntry]:
    """The agent's log entries from index ``start``, in order, read page by page."""
    position, remaining = start, limit
    while remaining is None or remaining > 0:
        size = LOG_PAGE if remaining is None else min(LOG_PAGE, remaining)
        rows = session.scalars(
            select(LogRow)
            .where(LogRow.agent_id == agent_id, LogRow.index >= position)
            .order_by(LogRow.index)
            .limit(size)
        ).all()
        for row in rows:
            yield log_entry_of(row)
        if len(rows) < size:
            return
        position = rows[-1].index + 1
        if remaining is not None:
            remaining -= len(rows)


def _as_utc(value: Any) -> dt.datetime:
    if not isinstance(value, dt.datetime):
        raise TypeError(f"service decisions are timed by datetimes, got {value!r}")
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


class SqlHistory:
    """The history of one agent inside one transaction.

    rows: decision rows the request has already loaded (by id), so reading an
    entry back does not query again. ``statistic`` is called after each score
    to store the gate's statistic beside the entry.
    """

    def __init__(self, session: Session, agent: Agent, rows: Mapping[str, Decision] | None = None) -> None:
        self.session = session
        self.agent = agent
        self.rows: dict[str, Decision] = dict(rows or {})
        self.last_score_row: LogRow | None = None
        self._new: set[str] = set()

    def expect_new(self, decision_id: str) -> None:
        """The caller made this id fresh: do not look for it (the unique constraint still guards it)."""
        self._new.add(decision_id)

    def _row(self, decision_id: str) -> Decision | None:
        row = self.rows.get(decision_id)
        if row is None and decision_id not in self._new:
            row = self.session.scalars(
                select(Decision).where(Decision.id == decision_id, Decision.agent_id == self.agent.id)
            ).first()
            if row is not None:
                self.rows[decision_id] = row
        return row

    def get(self, decision_id: str) -> DecisionEntry | None:
        row = self._row(decision_id)
        if row is None or row.engine_plan is None:
            return None
        return self._entry(row)

    @staticmethod
    def _entry(row: Decision) -> DecisionEntry:
        assert row.engine_plan is not None
        return DecisionEntry(
            Plan.from_dict(json.loads(row.engine_plan)),
            None if row.engine_decision is None else CoreDecision.from_dict(json.loads(row.engine_decision)),
            None if row.engine_settlement is None else Settlement.from_dict(json.loads(row.engine_settlement)),
            row.failure,
        )

    def put(self, entry: DecisionEntry) -> None:
        row = self._row(entry.decision_id)
        if row is None:
            plan = entry.plan
            row = Decision(
                id=entry.decision_id,
                agent_id=self.agent.id,
                status=DecisionStatus.PLANNED,
                decision_time=_as_utc(plan.time),
                maturity=_as_utc(plan.maturity),
                request={},
                plan={},
            )
            self.session.add(row)
            self.rows[entry.decision_id] = row
        if row.engine_plan is None:
            row.engine_plan = canonical_json(entry.plan.to_dict())
        if entry.decision is not None and row.engine_decision is None:
            row.engine_decision = canonical_json(entry.decision.to_dict())
        if entry.settlement is not None and row.engine_settlement is None:
            row.engine_settlement = canonical_json(entry.settlement.to_dict(mixtures=False))
        if entry.withdrawn is not None and row.failure is None:
            row.failure = entry.withdrawn
            row.status = DecisionStatus.FAILED

    def append_log(self, entry: LogEntry) -> None:
        payload = entry.payload
        score = payload.get("score") if entry.kind in (LogKind.SCORE, LogKind.CORRECTION) else None
        row = LogRow(
            agent_id=self.agent.id,
            index=entry.index,
            kind=entry.kind,
            decision_id=str(payload.get("date")),
            payload=canonical_json(payload),
            prev_hash=entry.prev_hash,
            hash=entry.hash,
            score=score,
        )
        self.session.add(row)
        if score is not None:
            self.last_score_row = row

    def append_contributions(
        self,
        decision_id: str,
        contributions: Mapping[ExperienceId, float],
        centred: Mapping[ExperienceId, float],
        after: int | None = None,
    ) -> None:
        """The decision's contribution rows; ``after``: number them from there on (SQLite, whose row numbers
        would otherwise reuse those of rows just deleted)."""
        row = self._row(decision_id)
        assert row is not None, "a settled decision has a row"
        self.session.add_all(
            Contribution(
                agent_id=self.agent.id,
                experience_id=str(experience_id),
                decision_id=decision_id,
                decision_time=row.decision_time,
                contribution=float(value),
                centred=float(centred[experience_id]),
                **({} if after is None else {"seq": after + 1 + position}),
            )
            for position, (experience_id, value) in enumerate(contributions.items())
        )

    def log_entries(self) -> Iterator[LogEntry]:
        self.session.flush()
        return read_log(self.session, self.agent.id)

    def entries_in_order(self) -> Iterator[DecisionEntry]:
        """Every decision of the agent in plan order (read in pages; rows already loaded are reused)."""
        self.session.flush()
        position = 0
        while True:
            rows = self.session.scalars(
                select(Decision)
                .where(Decision.agent_id == self.agent.id, Decision.seq > position)
                .order_by(Decision.seq)
                .limit(LOG_PAGE)
            ).all()
            for row in rows:
                self.rows.setdefault(row.id, row)
                if row.engine_plan is not None:
                    yield self._entry(row)
            if len(rows) < LOG_PAGE:
                return
            position = rows[-1].seq

    def correct(
        self, entry: DecisionEntry, contributions: Mapping[ExperienceId, float], centred: Mapping[ExperienceId, float]
    ) -> None:
        """The one rewrite the history allows: a corrected settlement and its contribution rows (the log keeps both outcomes)."""
        row = self._row(entry.decision_id)
        assert row is not None and entry.settlement is not None, "a corrected decision has a settled row"
        row.engine_settlement = canonical_json(entry.settlement.to_dict(mixtures=False))
        # the rewritten rows are numbered after every row there is, as a settlement's are: what read the rows up
        # to a number (a refit) sees that they changed. PostgreSQL's sequence never goes back; SQLite would give
        # the numbers of the rows deleted here again when they were the last, so there they are set
        after = None
        if self.session.get_bind().dialect.name == "sqlite":
            after = self.session.scalar(select(func.max(Contribution.seq))) or 0
        self.session.execute(
            delete(Contribution).where(
                Contribution.agent_id == self.agent.id, Contribution.decision_id == entry.decision_id
            )
        )
        self.append_contributions(entry.decision_id, contributions, centred, after)

    def rescore(self, scores: Mapping[str, float | None]) -> None:
        """The scores a correction's replay changed, in each decision's stored settlement and in its answer
        (the rows read in pages of ids)."""
        missing = [d for d in scores if d not in self.rows]
        for first in range(0, len(missing), LOG_PAGE):
            for loaded in self.session.scalars(
                select(Decision).where(
                    Decision.agent_id == self.agent.id, Decision.id.in_(missing[first : first + LOG_PAGE])
                )
            ):
                self.rows[loaded.id] = loaded
        for decision_id, score in scores.items():
            row = self.rows.get(decision_id)
            assert row is not None and row.engine_settlement is not None, "a rescored decision is settled"
            settlement = json.loads(row.engine_settlement)
            settlement["score"] = score
            row.engine_settlement = canonical_json(settlement)
            if row.settlement is not None:  # a new dict, so the JSON column is written
                row.settlement = {**row.settlement, "score": score}

    def log_events(self, start: int = 0) -> Iterator[tuple[int, str, str]]:
        """(index, kind, decision id) of the log from ``start``, read page by page without the payloads."""
        self.session.flush()
        position = start
        while True:
            rows = self.session.execute(
                select(LogRow.index, LogRow.kind, LogRow.decision_id)
                .where(LogRow.agent_id == self.agent.id, LogRow.index >= position)
                .order_by(LogRow.index)
                .limit(LOG_PAGE)
            ).all()
            yield from ((index, kind, decision_id) for index, kind, decision_id in rows)
            if len(rows) < LOG_PAGE:
                return
            position = rows[-1][0] + 1

    def score_index(self, decision_id: str) -> int | None:
        self.session.flush()
        return self.session.scalars(
            select(LogRow.index).where(
                LogRow.agent_id == self.agent.id, LogRow.decision_id == decision_id, LogRow.kind == LogKind.SCORE.value
            )
        ).first()

    def entries_of(self, decision_ids: Iterable[str]) -> dict[str, DecisionEntry]:
        """The entries of these decisions with their plans and settlements (what a replay reads: their
        decisions are left out), read in pages of ids without loading whole rows."""
        self.session.flush()
        found: dict[str, DecisionEntry] = {}
        missing = []
        for decision_id in dict.fromkeys(decision_ids):
            loaded = self.rows.get(decision_id)
            if loaded is None:
                missing.append(decision_id)
            elif loaded.engine_plan is not None:
                found[decision_id] = self._entry(loaded)
        for first in range(0, len(missing), LOG_PAGE):
            rows = self.session.execute(
                select(Decision.id, Decision.engine_plan, Decision.engine_settlement, Decision.failure).where(
                    Decision.agent_id == self.agent.id, Decision.id.in_(missing[first : first + LOG_PAGE])
                )
            ).all()
            for decision_id, plan, settlement, failure in rows:
                if plan is not None:
                    found[decision_id] = DecisionEntry(
                        Plan.from_dict(json.loads(plan)),
                        None,
                        None if settlement is None else Settlement.from_dict(json.loads(settlement)),
                        failure,
                    )
        return found

    def checkpoint_at_or_before(self, position: int) -> Checkpoint | None:
        self.session.flush()
        row = self.session.scalars(
            select(CheckpointRow)
            .where(CheckpointRow.agent_id == self.agent.id, CheckpointRow.position <= position)
            .order_by(CheckpointRow.position.desc())
            .limit(1)
        ).first()
        return None if row is None else Checkpoint.from_dict(json.loads(row.state))

    def drop_checkpoints_after(self, position: int) -> None:
        self.session.execute(
            delete(CheckpointRow).where(CheckpointRow.agent_id == self.agent.id, CheckpointRow.position > position)
        )

    def add_checkpoints(self, checkpoints: Sequence[Checkpoint], kept: int) -> None:
        """Store the checkpoints and delete all but the agent's newest ``kept``."""
        self.session.add_all(
            CheckpointRow(agent_id=self.agent.id, position=c.position, state=canonical_json(c.to_dict()))
            for c in checkpoints
        )
        self.session.flush()
        positions = self.session.scalars(
            select(CheckpointRow.position)
            .where(CheckpointRow.agent_id == self.agent.id)
            .order_by(CheckpointRow.position.desc())
            .offset(kept)
            .limit(1)
        ).first()
        if positions is not None:
            self.session.execute(
                delete(CheckpointRow).where(
                    CheckpointRow.agent_id == self.agent.id, CheckpointRow.position <= positions
                )
            )
