"""Agents: create with a frozen gate configuration, read."""

from __future__ import annotations

import numpy as np
from fastapi import APIRouter

from memtrial.engine import EngineConfig, MemTrial
from memtrial.settle import INVESTORS, project
from memtrial.trust import GateConfig
from service.db import transaction
from service.deps import ServicesDep, TenantDep
from service.models import Agent
from service.schemas import AgentCreate, AgentPublic
from service.store import load_agent
from service.universe import Universe
from service.views import agent_public

router = APIRouter(prefix="/v1/agents", tags=["agents"])


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
        agent = Agent(tenant_id=tenant_id, name=body.name, settings=settings, gate_hash=engine.gate_hash, state=engine.to_json(), state_version=0, index_version=0)
        session.add(agent)
        session.flush()
        return agent_public(agent)


@router.get("/{agent_id}")
def get_agent(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> AgentPublic:
    with transaction(services.sessions) as session:
        return agent_public(load_agent(session, tenant_id, agent_id, lock=False))
