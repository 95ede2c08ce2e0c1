"""Agents: create with a frozen gate configuration, read, list, rename or change the drafter, delete."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from sqlalchemy import delete, select

from service.db import transaction
from service.deps import ServicesDep, TenantDep
from service.errors import ApiError
from service.idempotency import Idempotency, IdempotencyKey
from service.models import Agent, Contribution, Decision, Experience, IdempotencyRecord, LogRow, RefitJob
from service.pagination import CursorQuery, LimitQuery, decode_cursor, encode_cursor
from service.requests import StrictJSONRoute
from service.schemas import AgentCreate, AgentList, AgentPatch, AgentPublic, NameQuery
from service.store import after_commit, load_agent
from service.usecases import agents
from service.views import agent_public

router = APIRouter(prefix="/v1/agents", tags=["agents"], route_class=StrictJSONRoute)

#: Tables holding an agent's rows, children first (deleting an agent deletes from each).
OWNED_TABLES = (LogRow, Contribution, Decision, Experience, RefitJob, IdempotencyRecord)


@router.post("", status_code=201)
def create_agent(
    body: AgentCreate, tenant_id: TenantDep, services: ServicesDep, request: Request, key: IdempotencyKey = None
) -> AgentPublic:
    """Create an agent; its gate configuration (and so the hash anchoring its log) is frozen now."""
    return agents.create(services, tenant_id, body, Idempotency(key, tenant_id, request, body))


@router.get("")
def list_agents(
    tenant_id: TenantDep,
    services: ServicesDep,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
    name: NameQuery = None,
) -> AgentList:
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
    agents.check_drafter(services, body.drafter)
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=True)
        if body.name is not None:
            agent.name = body.name
        if body.drafter is not None:
            agents.check_draft_limit(agent.settings, services.settings.max_drafts_per_decision)
        if body.drafter is not None or body.remove_drafter:
            agent.settings = {
                **agent.settings,
                "drafter": None
                if body.remove_drafter or body.drafter is None
                else body.drafter.model_dump(mode="json"),
            }
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

        def forget() -> None:
            services.engines.forget(agent_id)
            services.indexes.forget(agent_id)

        after_commit(session, forget)
    return Response(status_code=204)
