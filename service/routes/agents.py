"""Agents: create with a frozen gate configuration, read, list, rename or change the drafter, delete."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from service.deps import ServicesDep, TenantDep
from service.idempotency import Idempotency, IdempotencyKey
from service.pagination import CursorQuery, LimitQuery
from service.requests import StrictJSONRoute
from service.schemas import AgentCreate, AgentList, AgentPatch, AgentPublic, NameQuery
from service.usecases import agents

router = APIRouter(prefix="/v1/agents", tags=["agents"], route_class=StrictJSONRoute)


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
    return agents.list_page(services, tenant_id, limit, cursor, name)


@router.get("/{agent_id}")
def get_agent(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> AgentPublic:
    return agents.read(services, tenant_id, agent_id)


@router.patch("/{agent_id}")
def update_agent(agent_id: str, body: AgentPatch, tenant_id: TenantDep, services: ServicesDep) -> AgentPublic:
    """Rename the agent, change its drafter (``remove_drafter`` turns server drafting off) or its draft budget
    and horizon (from the next plan on, logged with the old and new values); every other setting is fixed."""
    return agents.update(services, tenant_id, agent_id, body)


@router.delete("/{agent_id}", status_code=204)
def delete_agent(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> Response:
    """Delete the agent and everything it owns: experiences and their embeddings, decisions,
    contributions, log entries, state checkpoints, refit jobs, stored idempotent answers. Irreversible."""
    agents.delete(services, tenant_id, agent_id)
    return Response(status_code=204)
