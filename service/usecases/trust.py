"""The trust use cases: the gate's state with its recent scores, the raw log a page at a time, the chain
re-checked.

A correction's score replaces the score it supersedes (and an earlier correction of the same decision),
and the later scores its replay changed are listed in its entry (``rescored``): the recent scores are
those in force, and a log page names the entries superseded or rescored (index -> the correction's index).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.db import transaction
from service.deps import Services
from service.history import read_log
from service.models import LogRow
from service.pagination import decode_cursor, encode_cursor
from service.schemas import GatePublic, LogEntryPublic, LogPage, ScorePublic, TrustPublic, VerifyPublic
from service.store import load_agent, return_engine
from service.views import trust_public

__all__ = ["ScoreBook", "log_page", "recent_scores", "score_book", "state", "verify"]


def state(services: Services, tenant_id: str, agent_id: str, limit: int) -> TrustPublic:
    """The gate's configuration and state, and its ``limit`` most recent scores in force, oldest first."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        engine = services.engines.checkout(session, agent)
        gate = engine.gate
        recent = recent_scores(session, agent.id, limit)
        public = TrustPublic(
            gate=GatePublic(**gate.config.to_dict()),
            gate_hash=engine.gate_hash,
            state=trust_public(gate.decision()),
            n_scores=gate.statistics.n_scored,
            scores=[
                ScorePublic(decision_id=decision_id, score=score, statistic=statistic)
                for decision_id, score, statistic in reversed(recent)
            ],
        )
        return_engine(session, agent, engine, services.engines)
        return public


@dataclass(frozen=True, slots=True)
class ScoreBook:
    """What the corrections changed, read from their log entries (method 4.10).

    superseded: a decision's score entry, or a correction of it, replaced by the next correction of the same
    decision (index -> that correction's index); rescored: a decision whose score a later correction's replay
    changed -> (its score now, that correction's index), the latest such change."""

    superseded: dict[int, int]
    rescored: dict[str, tuple[float | None, int]]

    def score_of(self, decision_id: str, index: int, logged: float | None) -> tuple[float | None, bool]:
        """The score in force of the entry at ``index`` (which logged ``logged``), and whether a later
        correction's replay changed it."""
        changed = self.rescored.get(decision_id)
        if changed is not None and changed[1] > index:
            return changed[0], True
        return logged, False


def score_book(session: Session, agent_id: str) -> ScoreBook:
    """The agent's corrections folded in log order (they are few: each is one request)."""
    corrections = session.execute(
        select(LogRow.index, LogRow.decision_id, LogRow.payload)
        .where(LogRow.agent_id == agent_id, LogRow.kind == "correction")
        .order_by(LogRow.index)
    ).all()
    latest: dict[str, int] = {}  # a corrected decision's entry in force so far: its last correction
    superseded: dict[int, int] = {}
    rescored: dict[str, tuple[float | None, int]] = {}
    for index, decision_id, text in corrections:
        payload = json.loads(text)
        first = payload.get("supersedes")
        if first is not None:
            superseded[int(latest.get(decision_id, first))] = int(index)
            latest[decision_id] = int(index)
        for rescored_id, score in payload.get("rescored", []):  # corrections logged before it held none
            rescored[str(rescored_id)] = (None if score is None else float(score), int(index))
    return ScoreBook(superseded, rescored)


def recent_scores(session: Session, agent_id: str, limit: int) -> list[tuple[str, float, float | None]]:
    """The ``limit`` most recent scores in force, newest first: (decision id, score, the gate's statistic the
    log recorded after it, None where a later correction's replay changed the score)."""
    book = score_book(session, agent_id)
    found: list[tuple[str, float, float | None]] = []
    before: int | None = None
    while len(found) < limit:
        conditions: list[Any] = [LogRow.agent_id == agent_id, LogRow.kind.in_(("score", "correction"))]
        if before is not None:
            conditions.append(LogRow.index < before)
        rows = session.execute(
            select(LogRow.index, LogRow.decision_id, LogRow.score, LogRow.statistic)
            .where(*conditions)
            .order_by(LogRow.index.desc())
            .limit(max(limit, 100))
        ).all()
        for index, decision_id, logged, statistic in rows:
            if index in book.superseded:
                continue
            score, changed = book.score_of(decision_id, index, logged)
            if score is not None:
                found.append((decision_id, score, None if changed else statistic))
                if len(found) == limit:
                    break
        if len(rows) < max(limit, 100):
            break
        before = rows[-1][0]
    return found


def log_page(services: Services, tenant_id: str, agent_id: str, limit: int, cursor: str | None) -> LogPage:
    """The raw hash-chained log, ``limit`` entries from the cursor, with the scores corrections superseded."""
    start = 0 if cursor is None else int(decode_cursor(cursor, "log", int))
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        total = session.scalar(select(func.count()).select_from(LogRow).where(LogRow.agent_id == agent.id)) or 0
        entries = list(read_log(session, agent.id, start, limit + 1))
        book = score_book(session, agent.id)
    items = [
        LogEntryPublic(index=e.index, kind=e.kind, payload=dict(e.payload), prev_hash=e.prev_hash, hash=e.hash)
        for e in entries[:limit]
    ]
    more = len(entries) > limit
    shown = {str(e.index): book.superseded[e.index] for e in entries[:limit] if e.index in book.superseded}
    # the entry in force of each decision on this page whose score a later correction's replay changed
    changed = {
        str(e.index): book.rescored[str(e.payload.get("date"))][1]
        for e in entries[:limit]
        if e.index not in book.superseded
        and e.kind in ("score", "correction")
        and book.score_of(str(e.payload.get("date")), e.index, None)[1]
    }
    return LogPage(
        gate_hash=agent.gate_hash,
        n_entries=total,
        items=items,
        next_cursor=encode_cursor("log", start + limit) if more else None,
        limit=limit,
        superseded=shown,
        rescored=changed,
    )


def verify(services: Services, tenant_id: str, agent_id: str) -> VerifyPublic:
    """Recompute the whole chain from the stored rows (read page by page) and check it ends at the engine's head."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        engine = services.engines.checkout(session, agent)
        check = engine.verify()
        return_engine(session, agent, engine, services.engines)
        return VerifyPublic(
            ok=check.ok, n_entries=check.n_entries, first_invalid=check.first_invalid, reason=check.reason
        )
