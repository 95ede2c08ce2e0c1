"""Decisions: plan (client or server drafting), drafts, settle, correct, read, list (:mod:`service.usecases.planning`, :mod:`~service.usecases.deciding`,
:mod:`~service.usecases.settling`, :mod:`~service.usecases.decision_queries`)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool

from service.deps import ServicesDep, TenantDep
from service.idempotency import Idempotency, IdempotencyKey
from service.modes import DecisionStatus, Listed
from service.pagination import CursorQuery, LimitQuery
from service.requests import StrictJSONRoute
from service.schemas import (
    CorrectionRequest,
    DecisionCreate,
    DecisionList,
    DecisionPublic,
    DecisionRecord,
    DraftsSubmit,
    PlanPublic,
    SettlementPublic,
    SettleRequest,
)
from service.usecases import deciding, decision_queries, settling

router = APIRouter(prefix="/v1/agents/{agent_id}/decisions", tags=["decisions"], route_class=StrictJSONRoute)
Status = Listed[DecisionStatus]


@router.post("", status_code=201)
async def create_decision(
    agent_id: str,
    body: DecisionCreate,
    tenant_id: TenantDep,
    services: ServicesDep,
    request: Request,
    key: IdempotencyKey = None,
) -> PlanPublic | DecisionPublic:
    """Plan a decision. Client drafting answers the plan (post one draft per subset next);
    server drafting drafts through the agent's provider and answers the decision."""
    return await deciding.create(services, tenant_id, agent_id, body, request, key)


@router.post("/{decision_id}/drafts")
async def submit_drafts(
    agent_id: str,
    decision_id: str,
    body: DraftsSubmit,
    tenant_id: TenantDep,
    services: ServicesDep,
    request: Request,
    key: IdempotencyKey = None,
) -> DecisionPublic:
    """One draft per designed subset, in the plan's order: for a portfolio agent each names every asset
    of the universe; for a scored agent any JSON (probabilities per outcome, numbers, answers), with
    ``reference`` the index of the conservative draft."""
    guard = Idempotency(key, tenant_id, request, body)
    return await run_in_threadpool(
        deciding.decide, services, tenant_id, agent_id, decision_id, body.drafts, guard, body.reference
    )


@router.post("/{decision_id}/settle")
async def settle_decision(
    agent_id: str,
    decision_id: str,
    body: SettleRequest,
    tenant_id: TenantDep,
    services: ServicesDep,
    request: Request,
    key: IdempotencyKey = None,
) -> SettlementPublic:
    """Score a matured decision and learn from it (settling again with the same payload is a no-op)."""
    guard = Idempotency(key, tenant_id, request, body)
    return await run_in_threadpool(settling.settle, services, tenant_id, agent_id, decision_id, body, guard)


@router.post("/{decision_id}/corrections")
async def correct_decision(
    agent_id: str,
    decision_id: str,
    body: CorrectionRequest,
    tenant_id: TenantDep,
    services: ServicesDep,
    request: Request,
    key: IdempotencyKey = None,
) -> SettlementPublic:
    """Replace a settled decision's wrong outcome (a bad price feed, a mis-graded answer) and relearn.

    Takes the settle body and a ``reason``. The log keeps the superseded score and gains a
    ``correction`` entry; values, trust statistics and the fallback become those of an agent
    settled with the corrected outcome from the start. Correcting with the current outcome is a no-op.
    """
    guard = Idempotency(key, tenant_id, request, body)
    return await run_in_threadpool(settling.correct, services, tenant_id, agent_id, decision_id, body, guard)


@router.get("")
async def list_decisions(
    agent_id: str,
    tenant_id: TenantDep,
    services: ServicesDep,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
    status: Annotated[Status | None, Query(description="only decisions in this state")] = None,
    maturity_before: Annotated[
        dt.datetime | None, Query(description="only decisions maturing before this time (aware ISO 8601)")
    ] = None,
) -> DecisionList:
    """The agent's decisions, oldest first, a page at a time."""
    return await run_in_threadpool(
        decision_queries.list_page, services, tenant_id, agent_id, limit, cursor, status, maturity_before
    )


@router.get("/{decision_id}")
async def get_decision(agent_id: str, decision_id: str, tenant_id: TenantDep, services: ServicesDep) -> DecisionRecord:
    return await run_in_threadpool(decision_queries.record, services, tenant_id, agent_id, decision_id)
