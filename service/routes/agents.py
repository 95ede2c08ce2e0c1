"""Agents: create with a frozen gate configuration, read, list, rename or change the drafter, delete."""

from __future__ import annotations

from typing import Any

import numpy as np
from fastapi import APIRouter, Request, Response
from sqlalchemy import delete, select

from memtrial.engine import EngineConfig, MemTrial
from memtrial.settle import INVESTORS, project
from memtrial.trust import GateConfig
from service.db import transaction
from service.deps import Services, ServicesDep, TenantDep
from service.errors import ApiError
from service.idempotency import Idempotency, IdempotencyKey
from service.models import Agent, Contribution, Decision, Experience, IdempotencyRecord, LogRow, RefitJob
from service.pagination import CursorQuery, LimitQuery, decode_cursor, encode_cursor
from service.requests import StrictJSONRoute
from service.schemas import AgentCreate, AgentList, AgentPatch, AgentPublic, DrafterSettings, NameQuery
from service.store import after_commit, load_agent
from service.universe import Universe
from service.views import agent_public

router = APIRouter(prefix="/v1/agents", tags=["agents"], route_class=StrictJSONRoute)

#: Tables holding an agent's rows, children first (deleting an agent deletes from each).
OWNED_TABLES = (LogRow, Contribution, Decision, Experience, RefitJob, IdempotencyRecord)


def _check_drafter(services: Services, drafter: DrafterSettings | None) -> None:
    if drafter is None:
        return
    provider = services.providers.get(drafter.provider)
    if provider is None:
        known = sorted(services.providers.by_name)
        raise ApiError(422, "invalid", f"drafter.provider: {drafter.provider!r} is not a provider of this server (known: {known})", "drafter.provider")
    why = provider.refusal(drafter.model)
    if why is not None:
        raise ApiError(422, "invalid", f"drafter.model: {drafter.model!r} {why} (provider {provider.name!r})", "drafter.model")


def _check_kind(body: AgentCreate) -> None:
    """What each kind of agent needs: a portfolio agent an investor and a universe; a scored agent neither."""
    if body.kind == "portfolio":
        for name in ("investor", "universe"):
            if getattr(body, name) is None:
                raise ApiError(422, "invalid", f"{name}: a portfolio agent needs one (or create a scored agent with kind 'scored')", name)
        if body.outcomes is not None:
            raise ApiError(422, "invalid", "outcomes: only scored agents have named outcomes", "outcomes")
        return
    for name in ("investor", "universe", "drafter"):
        if getattr(body, name) is not None:
            reason = "server drafting writes portfolios; a scored agent drafts on the client" if name == "drafter" else "a scored agent has no mandate or universe"
            raise ApiError(422, "invalid", f"{name}: {reason}", name)


@router.post("", status_code=201)
def create_agent(body: AgentCreate, tenant_id: TenantDep, services: ServicesDep, request: Request, key: IdempotencyKey = None) -> AgentPublic:
    gate = GateConfig(test=body.gate.test, alpha=body.gate.alpha, min_scores=body.gate.min_scores)  # type: ignore[arg-type]
    _check_kind(body)
    common: dict[str, Any] = {"design": body.design, "learner": body.learner, "gate": gate, "fallback": body.fallback, "action": body.action, "credit": body.credit, "robust": body.robust}
    if body.kind == "portfolio":
        assert body.investor is not None and body.universe is not None
        config = EngineConfig(investor=INVESTORS[body.investor], fee_bp=body.fee_bp, **common)
        universe = Universe([asset.model_dump() for asset in body.universe])
        project(np.full(universe.size, 1.0 / universe.size), universe.risky, universe.defensive, INVESTORS[body.investor])
    else:
        config = EngineConfig(gamma=0.0, fee_bp=body.fee_bp, **common)  # utilities come from the outcome; no mandate, no fee
    _check_drafter(services, body.drafter)
    engine = MemTrial(config)
    settings = body.model_dump(mode="json")
    settings["gate"] = gate.to_dict()
    guard = Idempotency(key, tenant_id, request, body)
    with transaction(services.sessions) as session:
        if (replayed := guard.replay(session)) is not None:
            return replayed  # type: ignore[return-value]
        agent = Agent(
            tenant_id=tenant_id,
            name=body.name,
            settings=settings,
            gate_hash=engine.gate_hash,
            state=engine.to_json(history=False),
            state_version=0,
            index_version=0,
        )
        session.add(agent)
        session.flush()
        guard.claim(session, agent.id)
        public = agent_public(agent)
        guard.complete(201, public)
        return public


@router.get("")
def list_agents(tenant_id: TenantDep, services: ServicesDep, limit: LimitQuery = 50, cursor: CursorQuery = None, name: NameQuery = None) -> AgentList:
    """The tenant's agents, oldest first, a page at a time (``name`` filters by exact name)."""
    query = select(Agent).where(Agent.tenant_id == tenant_id)
    if name is not None:
        query = query.where(Agent.name == name)
    if cursor is not None:
        query = query.where(Agent.id > decode_cursor(cursor, "agents", str))
    with transaction(services.sessions) as session:
        rows = session.scalars(query.order_by(Agent.id).limit(limit + 1)).all()
        items = [agent_public(agent) for agent in rows[:limit]]
    more = len(rows) > limit
    return AgentList(items=items, next_cursor=encode_cursor("agents", items[-1].id) if more else None, limit=limit)


@router.get("/{agent_id}")
def get_agent(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> AgentPublic:
    with transaction(services.sessions) as session:
        return agent_public(load_agent(session, tenant_id, agent_id, lock=False))


@router.patch("/{agent_id}")
def update_agent(agent_id: str, body: AgentPatch, tenant_id: TenantDep, services: ServicesDep) -> AgentPublic:
    """Rename the agent or change its drafter (``remove_drafter`` turns server drafting off)."""
    if body.drafter is not None and body.remove_drafter:
        raise ApiError(422, "invalid", "remove_drafter: give a drafter or remove_drafter, not both", "remove_drafter")
    _check_drafter(services, body.drafter)
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=True)
        if body.drafter is not None and agent.settings.get("kind", "portfolio") == "scored":
            raise ApiError(422, "invalid", "drafter: server drafting writes portfolios; a scored agent drafts on the client", "drafter")
        if body.name is not None:
            agent.name = body.name
        if body.drafter is not None or body.remove_drafter:
            agent.settings = {**agent.settings, "drafter": None if body.remove_drafter else body.drafter.model_dump(mode="json")}  # type: ignore[union-attr]
        session.flush()
        return agent_public(agent)


@router.delete("/{agent_id}", status_code=204)
def delete_agent(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> Response:
    """Delete the agent and everything it owns: experiences and their embeddings, decisions,
    contributions, log entries, refit jobs, stored idempotent answers. Irreversible."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=True)
        for table in OWNED_TABLES:
            session.execute(delete(table).where(table.agent_id == agent.id))
        session.delete(agent)
        after_commit(session, lambda: (services.engines.forget(agent_id), services.indexes.forget(agent_id)))
    return Response(status_code=204)
