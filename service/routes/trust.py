"""Trust and values: gate state, recent scores, the raw log a page at a time, chain verification."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from memtrial.trust.log import LogKind
from service.db import transaction
from service.deps import ServicesDep, TenantDep
from service.history import read_log
from service.models import LogRow
from service.pagination import CursorQuery, decode_cursor, encode_cursor
from service.requests import StrictJSONRoute
from service.schemas import (
    GatePublic,
    LogEntryPublic,
    LogPage,
    ScorePublic,
    TrustPublic,
    ValuesPublic,
    VerifyPublic,
)
from service.store import load_agent, return_engine
from service.usecases import values
from service.views import trust_public

router = APIRouter(prefix="/v1/agents/{agent_id}", tags=["trust"], route_class=StrictJSONRoute)

MAX_LOG_PAGE = 1000


@router.get("/trust")
def get_trust(
    agent_id: str,
    tenant_id: TenantDep,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LOG_PAGE, description="how many of the most recent scores")] = 200,
) -> TrustPublic:
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
                ScorePublic(decision_id=row.decision_id, score=row.score, statistic=row.statistic)
                for row in reversed(recent)
            ],
        )
        return_engine(session, agent, engine, services.engines)
        return public


def recent_scores(session: Session, agent_id: str, limit: int) -> list[Any]:
    """The ``limit`` most recent scores still in force (a correction's score replaces the one it supersedes), newest first."""
    superseded = superseded_scores(session, agent_id)
    scored: list[Any] = [
        LogRow.agent_id == agent_id,
        LogRow.kind.in_((LogKind.SCORE.value, LogKind.CORRECTION.value)),
        LogRow.score.is_not(None),
    ]
    if superseded:
        scored.append(LogRow.index.not_in(list(superseded)))
    query = (
        select(LogRow.decision_id, LogRow.score, LogRow.statistic)
        .where(*scored)
        .order_by(LogRow.index.desc())
        .limit(limit)
    )
    return list(session.execute(query).all())


def superseded_scores(session: Session, agent_id: str) -> dict[int, int]:
    """Score entries a correction replaced: their index -> the correction's index (read from the corrections)."""
    rows = session.execute(
        select(LogRow.index, LogRow.payload).where(LogRow.agent_id == agent_id, LogRow.kind == LogKind.CORRECTION.value)
    ).all()
    return {
        int(json.loads(payload)["supersedes"]): int(index)
        for index, payload in rows
        if json.loads(payload).get("supersedes") is not None
    }


@router.get("/trust/log")
def get_log(
    agent_id: str,
    tenant_id: TenantDep,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LOG_PAGE, description=f"entries per page (1..{MAX_LOG_PAGE})")] = 200,
    cursor: CursorQuery = None,
) -> LogPage:
    """The raw hash-chained log, a page at a time, for verification outside the service."""
    start = 0 if cursor is None else int(decode_cursor(cursor, "log", int))
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        total = session.scalar(select(func.count()).select_from(LogRow).where(LogRow.agent_id == agent.id)) or 0
        entries = list(read_log(session, agent.id, start, limit + 1))
        superseded = superseded_scores(session, agent.id)
    items = [
        LogEntryPublic(index=e.index, kind=e.kind, payload=dict(e.payload), prev_hash=e.prev_hash, hash=e.hash)
        for e in entries[:limit]
    ]
    more = len(entries) > limit
    shown = {str(e.index): superseded[e.index] for e in entries[:limit] if e.index in superseded}
    return LogPage(
        gate_hash=agent.gate_hash,
        n_entries=total,
        items=items,
        next_cursor=encode_cursor("log", start + limit) if more else None,
        limit=limit,
        superseded=shown,
    )


@router.get("/trust/verify")
def verify_trust(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> VerifyPublic:
    """Recompute the whole chain from the stored rows (read page by page) and check it ends at the engine's head."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        engine = services.engines.checkout(session, agent)
        check = engine.verify()
        return_engine(session, agent, engine, services.engines)
        return VerifyPublic(
            ok=check.ok, n_entries=check.n_entries, first_invalid=check.first_invalid, reason=check.reason
        )


@router.get("/values")
def get_values(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> ValuesPublic:
    """Every valued experience, best first: text, external id, mean, sd, 90% interval and P(v > 0)."""
    return values.read(services, tenant_id, agent_id)
