"""Agent use cases: the engine configuration an agent's settings freeze, creating the agent, and the
settings that may change after (name, drafter, draft budget and horizon, retrieval, quarantine)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

import numpy as np
from sqlalchemy import delete as delete_rows
from sqlalchemy import select

from memtrial.action.budget import budget_gate
from memtrial.credit.design import DesignKind, max_drafts
from memtrial.curation import QuarantineConfig
from memtrial.drafting.answers import AnswerSpec
from memtrial.engine.config import EngineConfig, ReferenceSource
from memtrial.engine.lifecycle import MemTrial
from memtrial.engine.reconfigure import MUTABLE_SETTINGS
from memtrial.errors import ConfigError
from memtrial.outcomes.mandates import INVESTORS, project
from memtrial.records import DecisionKind
from memtrial.trust.gate import GateConfig
from service.db import transaction
from service.deps import Services
from service.errors import ApiError
from service.idempotency import Idempotency
from service.models import (
    Agent,
    CheckpointRow,
    Contribution,
    Decision,
    Experience,
    IdempotencyRecord,
    LogRow,
    RefitJob,
)
from service.pagination import decode_cursor, encode_cursor
from service.schemas import AgentCreate, AgentList, AgentPatch, AgentPublic, DrafterSettings
from service.store import after_commit, load_agent, return_engine, save_engine
from service.universe import Universe
from service.usecases.unit import check_replay
from service.views import agent_public

__all__ = [
    "OWNED_TABLES",
    "check_draft_limit",
    "check_drafter",
    "create",
    "delete",
    "engine_config",
    "list_page",
    "read",
    "update",
]

#: Tables holding an agent's rows, children first (deleting an agent deletes from each).
OWNED_TABLES = (LogRow, Contribution, CheckpointRow, Decision, Experience, RefitJob, IdempotencyRecord)


def check_drafter(services: Services, drafter: DrafterSettings | None) -> None:
    """A drafter must name a provider of this server and a model that provider may call."""
    if drafter is None:
        return
    provider = services.providers.get(drafter.provider)
    if provider is None:
        known = sorted(services.providers.by_name)
        raise ApiError(
            422,
            "invalid",
            f"drafter.provider: {drafter.provider!r} is not a provider of this server (known: {known})",
            "drafter.provider",
        )
    why = provider.refusal(drafter.model)
    if why is not None:
        raise ApiError(
            422, "invalid", f"drafter.model: {drafter.model!r} {why} (provider {provider.name!r})", "drafter.model"
        )


def check_draft_limit(settings: Mapping[str, Any], limit: int) -> None:
    """An agent's design and k must need at most ``limit`` drafts per decision (the server's
    ``MEMTRIAL_MAX_DRAFTS_PER_DECISION``), or its decisions could never be drafted: 422 naming k."""
    design, k = str(settings.get("design", "half")), int(settings.get("k", 4))
    pairs = (
        settings.get("kind", DecisionKind.PORTFOLIO) == DecisionKind.PORTFOLIO
        and settings.get("reference") == ReferenceSource.MEMORY_FREE
    )
    needed = max_drafts(design, k, extra_reference=pairs)
    if settings.get("draft_budget") is not None:  # an exploiting plan drafts one subset, or two to blend
        needed = max(needed, 2 if pairs else 1)
    if needed > limit:
        raise ApiError(
            422,
            "invalid",
            f"k: design {design!r} with k = {k} needs up to {needed} drafts per decision, more than this server's "
            f"limit of {limit} (MEMTRIAL_MAX_DRAFTS_PER_DECISION); choose a smaller k or another design",
            "k",
        )


def _check_kind(body: AgentCreate) -> None:
    """What each kind of agent needs: a portfolio agent an investor and a universe; a scored agent neither."""
    if body.kind is DecisionKind.PORTFOLIO:
        for name in ("investor", "universe"):
            if getattr(body, name) is None:
                raise ApiError(
                    422,
                    "invalid",
                    f"{name}: a portfolio agent needs one (or create a scored agent with kind 'scored')",
                    name,
                )
        if body.outcomes is not None:
            raise ApiError(422, "invalid", "outcomes: only scored agents have named outcomes", "outcomes")
        if body.answer is not None:
            raise ApiError(422, "invalid", "answer: a portfolio agent's drafts are weights over its universe", "answer")
        return
    for name in ("investor", "universe"):
        if getattr(body, name) is not None:
            raise ApiError(422, "invalid", f"{name}: a scored agent has no mandate or universe", name)
    answer = None if body.answer is None else body.answer.model_dump(mode="json", exclude_none=True)
    if body.outcomes is not None and answer is not None and answer["type"] != "probabilities":
        raise ApiError(
            422,
            "invalid",
            f"answer.type: an agent with named outcomes drafts probability forecasts, not {answer['type']!r}",
            "answer.type",
        )
    if body.outcomes is None and answer is not None and answer["type"] == "probabilities":
        raise ApiError(422, "invalid", "answer.type: probabilities need the agent's named outcomes", "answer.type")
    try:
        AnswerSpec.of_agent(body.outcomes, answer)
    except ConfigError as error:
        raise ApiError(422, "invalid", error.message, error.field or "answer") from None


def engine_config(body: AgentCreate) -> tuple[EngineConfig, GateConfig]:
    """The engine configuration (and its frozen gate) an agent's settings give; 422 for settings that do not fit together."""
    gate = budget_gate(
        GateConfig(test=body.gate.test, alpha=body.gate.alpha, min_scores=body.gate.min_scores),
        body.draft_budget,
    )
    _check_kind(body)
    common: dict[str, Any] = {
        "design": body.design,
        "k": body.k,
        "learner": body.learner,
        "gate": gate,
        "fallback": body.fallback,
        "action": body.action,
        "credit": body.credit,
        "robust": body.robust,
        "draft_budget": body.draft_budget,
        "draft_horizon": body.draft_horizon,
        "retrieval": body.retrieval,
        "quarantine": QuarantineConfig(**body.quarantine.model_dump()),
    }
    if body.kind is not DecisionKind.PORTFOLIO:
        if body.reference is not ReferenceSource.GIVEN:
            raise ApiError(
                422, "invalid", "reference: a scored agent designates its reference draft when it decides", "reference"
            )
        if body.design in (DesignKind.FOLD, DesignKind.SATURATED):
            raise ApiError(
                422,
                "invalid",
                f"design: {'the odd half' if body.design is DesignKind.FOLD else 'the saturated design'} has no memory-free run to serve as a scored agent's reference draft; use half or full",
                "design",
            )
        return EngineConfig(
            gamma=0.0, fee_bp=body.fee_bp, **common
        ), gate  # utilities come from the outcome; no mandate, no fee
    assert body.investor is not None and body.universe is not None
    universe = Universe([asset.model_dump() for asset in body.universe])
    project(
        np.full(universe.size, 1.0 / universe.size), universe.risky, universe.defensive, INVESTORS[body.investor]
    )  # the mandate is feasible
    return EngineConfig(
        investor=INVESTORS[body.investor], fee_bp=body.fee_bp, reference=ReferenceSource(body.reference), **common
    ), gate


def create(services: Services, tenant_id: str, body: AgentCreate, guard: Idempotency) -> AgentPublic:
    """A new agent with its frozen gate configuration and an empty engine."""
    config, gate = engine_config(body)
    check_draft_limit(body.model_dump(), services.settings.max_drafts_per_decision)
    check_drafter(services, body.drafter)
    engine = MemTrial(config)
    settings = body.model_dump(mode="json")
    settings["gate"] = gate.to_dict()
    with transaction(services.sessions) as session:
        check_replay(session, guard)
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


def _engine_changes(body: AgentPatch) -> dict[str, Any]:
    """The engine settings a PATCH changes: of the quarantine, only the fields it gives."""
    changes: dict[str, Any] = {name: getattr(body, name) for name in MUTABLE_SETTINGS if name in body.model_fields_set}
    if body.quarantine is not None:
        changes["quarantine"] = {name: getattr(body.quarantine, name) for name in body.quarantine.model_fields_set}
    return changes


def _stored(value: Any) -> Any:
    """An engine setting as the agent's settings (JSON) hold it."""
    if isinstance(value, QuarantineConfig):
        return value.to_dict()
    return value.value if isinstance(value, StrEnum) else value


def update(services: Services, tenant_id: str, agent_id: str, body: AgentPatch) -> AgentPublic:
    """Rename the agent, change its drafter (``remove_drafter`` turns server drafting off), its draft
    budget and horizon, its retrieval or its quarantine, from the next plan (or settlement) on. A change of
    drafter, budget, horizon, retrieval or quarantine is a ``settings`` entry of the agent's log with the
    old and new values (:meth:`memtrial.engine.lifecycle.MemTrial.change_settings`); a value the engine
    refuses is a 422 naming the field, and nothing changes."""
    if body.drafter is not None and body.remove_drafter:
        raise ApiError(422, "invalid", "remove_drafter: give a drafter or remove_drafter, not both", "remove_drafter")
    check_drafter(services, body.drafter)
    engine_changes = _engine_changes(body)
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=True)
        if body.name is not None:
            agent.name = body.name
        if body.drafter is not None:  # an agent made under a larger limit cannot take a drafter
            check_draft_limit(agent.settings, services.settings.max_drafts_per_decision)
        settings = dict(agent.settings)
        recorded: dict[str, tuple[Any, Any]] = {}
        if body.drafter is not None or body.remove_drafter:
            drafter = None if body.drafter is None else body.drafter.model_dump(mode="json")
            recorded["drafter"] = (settings.get("drafter"), drafter)
            settings["drafter"] = drafter
        if engine_changes or recorded:
            engine = services.engines.checkout(session, agent)
            try:
                entry = engine.change_settings(engine_changes, recorded=recorded)
            except ConfigError as error:
                raise ApiError(422, "invalid", error.message, error.field) from None
            settings.update({name: _stored(getattr(engine.config, name)) for name in engine_changes})
            agent.settings = settings
            if entry is None:
                return_engine(session, agent, engine, services.engines)
            else:
                save_engine(session, agent, engine, services.engines)
        session.flush()
        return agent_public(agent)


def list_page(services: Services, tenant_id: str, limit: int, cursor: str | None, name: str | None) -> AgentList:
    """The tenant's agents, oldest first, a page of ``limit`` after ``cursor`` (``name``: exact name only)."""
    query = select(Agent).where(Agent.tenant_id == tenant_id)
    if name is not None:
        query = query.where(Agent.name == name)
    scope = (tenant_id, name)
    if cursor is not None:
        query = query.where(Agent.id > decode_cursor(cursor, "agents", str, scope))
    with transaction(services.sessions) as session:
        rows = session.scalars(query.order_by(Agent.id).limit(limit + 1)).all()
        items = [agent_public(agent) for agent in rows[:limit]]
    more = len(rows) > limit
    return AgentList(
        items=items, next_cursor=encode_cursor("agents", items[-1].id, scope) if more else None, limit=limit
    )


def read(services: Services, tenant_id: str, agent_id: str) -> AgentPublic:
    """One of the tenant's agents (404 for another tenant's)."""
    with transaction(services.sessions) as session:
        return agent_public(load_agent(session, tenant_id, agent_id, lock=False))


def delete(services: Services, tenant_id: str, agent_id: str) -> None:
    """Delete the agent and every row it owns in one transaction; its cached engine and index go once it commits."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=True)
        for table in OWNED_TABLES:
            session.execute(delete_rows(table).where(table.agent_id == agent.id))
        session.delete(agent)

        def forget() -> None:
            services.engines.forget(agent_id)
            services.indexes.forget(agent_id)

        after_commit(session, forget)
