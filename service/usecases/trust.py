"""The trust use cases: the gate's state with its recent scores, the raw log a page at a time, the chain
re-checked.

A correction's score replaces the score it supersedes (and an earlier correction of the same decision),
and the later scores its replay changed are listed in its entry (``rescored``): the recent scores are
those in force, and a log page names the entries superseded or rescored (index -> the correction's index).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from memtrial.trust.gate import TrustGate, make_gate
from service.db import transaction
from service.deps import Services
from service.history import read_log
from service.models import LogRow
from service.pagination import decode_cursor, encode_cursor
from service.schemas import GatePublic, LogEntryPublic, LogPage, ScorePublic, TrustPublic, VerifyPublic
from service.store import load_agent, return_engine
from service.views import gate_statistic, trust_public

__all__ = ["ScoreBook", "log_page", "recent_scores", "score_book", "state", "verify"]


def state(services: Services, tenant_id: str, agent_id: str, limit: int) -> TrustPublic:
    """The gate's configuration and state, and its ``limit`` most recent scores in force, oldest first."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        engine = services.engines.checkout(session, agent)
        gate = engine.gate
        recent = recent_scores(session, agent.id, limit, lambda: make_gate(gate.config))
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
    corrected: dict[str, tuple[float | None, int]]  # a corrected decision -> (its last correction's score, index)

    def in_force(self, decision_id: str, logged: float | None) -> float | None:
        """A decision's score in force, its score entry having logged ``logged``: the latest of its own last
        correction and the changes later corrections' replays made."""
        found = [x for x in (self.corrected.get(decision_id), self.rescored.get(decision_id)) if x is not None]
        return max(found, key=lambda x: x[1])[0] if found else logged

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
    corrected: dict[str, tuple[float | None, int]] = {}
    for index, decision_id, text in corrections:
        payload = json.loads(text)
        first = payload.get("supersedes")
        if first is not None:
            superseded[int(latest.get(decision_id, first))] = int(index)
            latest[decision_id] = int(index)
            score = payload.get("score")
            corrected[str(decision_id)] = (None if score is None else float(score), int(index))
        for rescored_id, score in payload.get("rescored", []):  # corrections logged before it held none
            rescored[str(rescored_id)] = (None if score is None else float(score), int(index))
    return ScoreBook(superseded, rescored, corrected)


def recent_scores(
    session: Session, agent_id: str, limit: int, new_gate: Callable[[], TrustGate]
) -> list[tuple[str, float, float | None]]:
    """The ``limit`` most recent scores in force, newest first: (decision id, score, the gate's statistic after
    it). Without corrections, as the log recorded them; after one, folded along every score entry in log order
    with the scores in force (a fresh gate from ``new_gate``), as the gate itself now holds them: a correction's
    replay changes later scores and every statistic after them, which the log did not record."""
    book = score_book(session, agent_id)
    if book.superseded or book.rescored:
        rows = session.execute(
            select(LogRow.decision_id, LogRow.score)
            .where(LogRow.agent_id == agent_id, LogRow.kind == "score")
            .order_by(LogRow.index)
        ).all()
        gate = new_gate()
        folded: list[tuple[str, float, float | None]] = []
        for decision_id, entered in rows:
            score = book.in_force(decision_id, entered)
            if score is not None:
                gate.statistics.add(score)
                folded.append((decision_id, score, gate_statistic(gate)))
        return folded[::-1][:limit]
    recorded = session.execute(
        select(LogRow.decision_id, LogRow.score, LogRow.statistic)
        .where(LogRow.agent_id == agent_id, LogRow.kind == "score", LogRow.score.is_not(None))
        .order_by(LogRow.index.desc())
        .limit(limit)
    ).all()
    return [(decision_id, float(score or 0.0), statistic) for decision_id, score, statistic in recorded]


def log_page(services: Services, tenant_id: str, agent_id: str, limit: int, cursor: str | None) -> LogPage:
    """The raw hash-chained log, ``limit`` entries from the cursor, with the scores corrections superseded."""
    start = 0 if cursor is None else int(decode_cursor(cursor, "log", int, (agent_id,)))
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
        next_cursor=encode_cursor("log", start + limit, (agent_id,)) if more else None,
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
