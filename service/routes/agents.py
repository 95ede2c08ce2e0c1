"""Agents: create with a frozen gate configuration, read, list, delete with everything they own."""

from __future__ import annotations

import numpy as np
from fastapi import APIRouter, Response
from sqlalchemy import delete, select

from memtrial.engine import EngineConfig, MemTrial
from memtrial.settle import INVESTORS, project
from memtrial.trust import GateConfig
from service.db import transaction
from service.deps import ServicesDep, TenantDep
from service.models import Agent, Contribution, Decision, Experience, LogRow, RefitJob
from service.pagination import CursorQuery, LimitQuery, decode_cursor, encode_cursor
from service.schemas import AgentCreate, AgentList, AgentPublic, NameQuery
from service.store import after_commit, load_agent
from service.universe import Universe
from service.views import agent_public

router = APIRouter(prefix="/v1/agents", tags=["agents"])

#: Tables holding an agent's rows, children first (deleting an agent deletes from each).
OWNED_TABLES = (LogRow, Contribution, Decision, Experience, RefitJob)


@router.post("", status_code=201)
def create_agent(body: AgentCreate, tenant_id: TenantDep, services: ServicesDep) -> AgentPublic:
    gate = GateConfig(test=body.gate.test, alpha=body.gate.alpha, min_scores=body.gate.min_scores)  # type: ignore[arg-type]
    config = EngineConfig(
        design=body.design,  # type: ignore[arg-type]
        learner=body.learner,  # type: ignore[arg-type]
        gate=gate,
        fallback=body.fallback,  # type: ignore[arg-type]
        investor=INVESTORS[body.investor],
        fee_bp=body.fee_bp,
    )
    universe = Universe([asset.model_dump() for asset in body.universe])
    project(np.full(universe.size, 1.0 / universe.size), universe.risky, universe.defensive, INVESTORS[body.investor])
    engine = MemTrial(config)
    settings = body.model_dump(mode="json")
    settings["gate"] = gate.to_dict()
    with transaction(services.sessions) as session:
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
        return agent_public(agent)


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


@router.delete("/{agent_id}", status_code=204)
def delete_agent(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> Response:
    """Delete the agent and everything it owns: experiences and their embeddings, decisions,
    contributions, log entries, refit jobs. Irreversible."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=True)
        for table in OWNED_TABLES:
            session.execute(delete(table).where(table.agent_id == agent.id))
        session.delete(agent)
        after_commit(session, lambda: (services.engines.forget(agent_id), services.indexes.forget(agent_id)))
    return Response(status_code=204)
