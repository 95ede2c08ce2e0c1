"""Planning a decision: retrieve (or take the request's chosen experiences, or let the engine pick k of
the request's candidates), design the subsets, freeze the predictions and register the plan.

Server retrieval follows the agent's ``retrieval``: by similarity, the k closest experiences not in
quarantine; ``value_aware``, the engine picks k of the :data:`POOL` closest by similarity and learned
value (method 4.12; with no trust evidence, exactly the similarity ranking).

With server drafting the plan also reserves the retries its drafts may send
(:func:`plan`'s ``Retries``) and leases the decision to the request drafting it
(:mod:`service.leases`); :mod:`service.usecases.deciding` takes it from there.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from memtrial.curation import RetrievalMode
from memtrial.engine import MemTrial
from memtrial.engine.config import ReferenceSource
from memtrial.outcomes.mandates import INVESTORS
from memtrial.records import DecisionKind, Plan
from service.deps import Services
from service.drafting import Retries
from service.errors import ApiError
from service.history import SqlHistory
from service.idempotency import Idempotency
from service.models import Agent, Experience, new_id, utcnow
from service.modes import DecisionStatus
from service.schemas import (
    MAX_CANDIDATES,
    DecisionCreate,
    DialPublic,
    PlanPublic,
    RetrievedPublic,
    SubsetPublic,
)
from service.store import save_engine
from service.tracing import span
from service.universe import Universe
from service.usecases.agents import check_draft_limit
from service.usecases.curation import candidate_rows
from service.usecases.unit import agent_write
from service.views import shown, trust_public

#: how many of the closest experiences server retrieval hands value-aware retrieval to pick k from
POOL = MAX_CANDIDATES

#: what the engine plans on: ``{"retrieved": ids}`` or ``{"candidates": ids, "similarities": scores}``
Selection = dict[str, Any]
#: how a plan's experiences were chosen: searched by the server, given by the client, or picked among its candidates
Retrieval = Literal["server", "client", "candidates"]


def agent_kind(settings: dict[str, object]) -> DecisionKind:
    """What an agent's decisions are (agents made before scored ones existed: portfolio)."""
    return DecisionKind(str(settings.get("kind", DecisionKind.PORTFOLIO)))


def plan(
    services: Services, tenant_id: str, agent_id: str, body: DecisionCreate, guard: Idempotency
) -> tuple[PlanPublic, dict[str, object], Retries]:
    """Plan a decision: retrieve, design, freeze the predictions; the plan, the agent's settings and the
    retries server drafting may send (reserved now: :func:`_retries`)."""
    _check_decision_time(services, body)
    candidates = body.candidate_ids is not None or body.candidate_external_ids is not None
    chosen = candidates or body.retrieved_ids is not None or body.retrieved_external_ids is not None
    with span("embedding.encode", texts=0 if chosen else 1):
        context = None if chosen else services.embedder.encode([body.context_text])[0]
    lease = services.settings.idempotency_lease_seconds if body.drafting == "server" else None
    with agent_write(services, tenant_id, agent_id, guard, lease=lease) as (session, agent):
        check_draft_limit(agent.settings, services.settings.max_drafts_per_decision)
        universe, reference = _universe_and_reference(agent, body)
        if candidates:
            given = candidate_rows(session, agent, body.candidate_ids, body.candidate_external_ids, "candidate")
            scores: list[float | None] = [None] * len(given) if body.similarities is None else [*body.similarities]
            selection: Selection = {"candidates": [i for i, _ in given], "similarities": body.similarities}
            similarity: dict[str, float | None] = {i: s for (i, _), s in zip(given, scores, strict=True)}
        elif context is None:
            similarity = dict(_chosen_experiences(session, agent, body))
            selection = {"retrieved": list(similarity)}
        engine = services.engines.checkout(session, agent)
        if context is not None:
            selection, similarity = _server_selection(services, session, agent, engine, context)
        elif "retrieved" in selection:
            _refuse_quarantined(engine, selection["retrieved"], body)
        history = engine.history
        assert isinstance(history, SqlHistory)
        decision_id = new_id()
        history.expect_new(decision_id)
        with span("engine.plan", experiences=len(similarity)):
            plan = _engine_plan(engine, decision_id, body, selection, universe, reference)
        hits = [(str(e), similarity[str(e)]) for e in plan.experience_ids]
        retrieval: Retrieval = "server" if context is not None else "candidates" if candidates else "client"
        public = _plan_public(session, decision_id, plan, hits, retrieval)
        row = history.rows[decision_id]
        # decisions planned before settle checked the horizon keep being settled as they were
        row.request = {**body.model_dump(mode="json"), "horizon_checked": True}
        row.plan = public.model_dump(mode="json")
        retries = Retries(0, "client drafting")
        if lease is None:
            guard.complete(201, public)
        else:  # withdrawn unless the request drafting it renews this (service.leases)
            row.drafting_until = utcnow() + dt.timedelta(seconds=lease)
            retries = _retries(services, agent, engine, len(plan.masks))
        save_engine(session, agent, engine, services.engines, head_only=True)
        return public, dict(agent.settings), retries


def _check_decision_time(services: Services, body: DecisionCreate) -> None:
    """A decision is not made in the future (beyond the server's allowed clock skew): 422 otherwise."""
    latest = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=services.settings.max_clock_skew_seconds)
    if body.decision_time > latest:
        raise ApiError(
            422,
            "invalid",
            f"decision_time: {body.decision_time.isoformat()} is later than now plus the allowed clock skew "
            f"({services.settings.max_clock_skew_seconds} s): a decision cannot be made in the future",
            "decision_time",
        )


def _universe_and_reference(agent: Agent, body: DecisionCreate) -> tuple[Universe | None, Any]:
    """The agent's universe and the decision's reference weights as a vector over it (both None for a
    scored agent; the reference None when the request gives none), checked against the agent's kind,
    reference source and mandate."""
    scored = agent_kind(agent.settings) is DecisionKind.SCORED
    if scored and body.reference_weights is not None:
        raise ApiError(
            422,
            "invalid",
            "reference_weights: a scored decision has no universe; designate the reference draft when posting the drafts",
            "reference_weights",
        )
    if not scored and body.maturity <= body.decision_time:
        raise ApiError(
            422,
            "invalid",
            f"maturity: a portfolio decision holds {body.horizon} sessions: its maturity must be later than its decision_time",
            "maturity",
        )
    if scored:
        return None, None
    universe = Universe(agent.settings["universe"])
    if body.reference_weights is None:
        return universe, None
    reference = universe.vector(body.reference_weights, "reference_weights")
    if agent.settings.get("reference", ReferenceSource.GIVEN) == ReferenceSource.MEMORY_FREE:
        raise ApiError(
            422,
            "invalid",
            "reference_weights: this agent's reference is each decision's memory-free draft",
            "reference_weights",
        )
    universe.check_mandate(reference, INVESTORS[str(agent.settings["investor"])], "reference_weights")
    return universe, reference


def _plan_public(
    session: Session,
    decision_id: str,
    plan: Plan,
    hits: list[tuple[str, float | None]],
    retrieval: Retrieval,
) -> PlanPublic:
    """The plan as answered: the retrieved experiences (their texts and external ids), the subsets, the
    frozen predictions, the trust state."""
    with session.no_autoflush:  # the new row is written once, complete, at commit
        rows = session.execute(
            select(Experience.id, Experience.text, Experience.external_id).where(Experience.id.in_(plan.experience_ids))
        ).all()
    texts = {row.id: row.text for row in rows}
    external = {row.id: row.external_id for row in rows}
    return PlanPublic(
        decision_id=decision_id,
        status=DecisionStatus.PLANNED,
        decision_time=plan.time,  # type: ignore[arg-type]
        maturity=plan.maturity,  # type: ignore[arg-type]
        retrieved=[RetrievedPublic(id=h, text=texts[h], score=s, external_id=external[h]) for h, s in hits],
        retrieval=retrieval,
        subsets=[
            SubsetPublic(
                index=i,
                mask=m,
                experience_ids=list(map(str, subset)),
                texts=[texts[str(e)] for e in subset],
                external_ids=[external[str(e)] for e in subset],
            )
            for i, (m, subset) in enumerate(zip(plan.masks, plan.subsets, strict=True))
        ],
        predictions={str(e): shown(v) for e, v in plan.predictions.items()},
        learner_mode=plan.learner_mode,
        trust=trust_public(plan.trust),
        q=plan.q,
        dial=None if plan.dial is None else DialPublic(**plan.dial.to_dict()),
        trial=plan.trial,
        draft_calls=plan.draft_calls,
    )


def _retries(services: Services, agent: Agent, engine: MemTrial, runs: int) -> Retries:
    """The retries of malformed answers a server-drafted decision of ``runs`` drafts may send, reserved
    from the agent's draft budget now: the drafter's ``max_retries`` per draft, within the server's limit
    of calls per decision and what the budget's credit can spare."""
    limit = services.settings.max_drafts_per_decision
    per_draft = int((agent.settings.get("drafter") or {}).get("max_retries", 2))
    wanted = max(min(limit - runs, runs * per_draft), 0)
    reserved = engine.reserve_calls(wanted)
    if reserved < wanted:
        bound = "the agent's draft budget pays for every call, retries included, and its credit was spent"
    elif wanted < runs * per_draft:
        bound = f"this server sends at most {limit} calls for one decision (MEMTRIAL_MAX_DRAFTS_PER_DECISION)"
    else:
        bound = "the drafter's max_retries"
    return Retries(reserved, bound)


def _refuse_quarantined(engine: MemTrial, retrieved: list[str], body: DecisionCreate) -> None:
    """A request's own retrieval may not name a quarantined experience: 422 naming the field and them, by the
    ids the request used (its external ids, where it named experiences by those)."""
    named = retrieved if body.retrieved_external_ids is None else body.retrieved_external_ids  # in its order
    quarantined = [name for e, name in zip(retrieved, named, strict=True) if e in engine.quarantined]
    if quarantined:
        field = "retrieved_ids" if body.retrieved_external_ids is None else "retrieved_external_ids"
        raise ApiError(
            422,
            "invalid",
            f"{field}: {quarantined} are quarantined experiences and cannot be retrieved (release them first)",
            field,
        )


def _server_selection(
    services: Services, session: Session, agent: Agent, engine: MemTrial, context: Any
) -> tuple[Selection, dict[str, float | None]]:
    """Server retrieval by the agent's retrieval mode: by similarity, the k closest experiences not in
    quarantine, in the index's order; value-aware, the :data:`POOL` closest for the engine to pick k of."""
    k = _retrieval_k(agent)
    quarantined = {str(e) for e in engine.quarantined}
    value_aware = engine.config.retrieval is RetrievalMode.VALUE_AWARE
    if not value_aware:
        with span("retrieval.search", k=k + len(quarantined)):
            found = services.indexes.search_usable(session, agent, context, k, quarantined)
        return {"retrieved": [h for h, _ in found]}, dict(found)
    with span("retrieval.search", k=POOL):
        found = [(h, s) for h, s in services.indexes.search(session, agent, context, POOL) if h not in quarantined]
    similarity: dict[str, float | None] = dict(found)
    return {"candidates": [h for h, _ in found], "similarities": [s for _, s in found]}, similarity


def _engine_plan(
    engine: MemTrial,
    decision_id: str,
    body: DecisionCreate,
    selection: Selection,
    universe: Universe | None,
    reference: Any,
) -> Plan:
    """The engine's plan over the selected experiences (retrieved, or candidates it picks k of): a scored
    one, or a portfolio over the universe."""
    if universe is None:
        return engine.plan(decision_id, body.decision_time, body.maturity, **selection, kind=DecisionKind.SCORED)
    return engine.plan(
        decision_id,
        body.decision_time,
        body.maturity,
        **selection,
        reference=reference,
        n_assets=universe.size,
        risky=universe.risky,
        defensive=universe.defensive,
    )


def _retrieval_k(agent: Agent) -> int:
    """How many experiences the agent plans on (agents made before the setting existed: 4)."""
    return int(agent.settings.get("k", 4))


def _chosen_experiences(session: Session, agent: Agent, body: DecisionCreate) -> list[tuple[str, None]]:
    """The experiences a request chose itself (by id or external id), in its order: each an active
    experience of this agent, or a 422 naming those that are not."""
    by_external = body.retrieved_external_ids is not None
    wanted = list((body.retrieved_external_ids if by_external else body.retrieved_ids) or [])
    field = "retrieved_external_ids" if by_external else "retrieved_ids"
    k = _retrieval_k(agent)
    if len(wanted) > k:
        raise ApiError(
            422, "invalid", f"{field}: this agent plans on at most k = {k} experiences, got {len(wanted)}", field
        )
    key = Experience.external_id if by_external else Experience.id
    rows = session.execute(
        select(key, Experience.id, Experience.active).where(Experience.agent_id == agent.id, key.in_(wanted))
    ).all()
    found = {row[0]: (row.id, row.active) for row in rows}
    unknown = [name for name in wanted if name not in found]
    if unknown:
        what = "external ids" if by_external else "ids"
        raise ApiError(
            422,
            "invalid",
            f"{field}: no experience of this agent has the {what} {unknown} (add them first)",
            field,
        )
    retired = [name for name in wanted if not found[name][1]]
    if retired:
        raise ApiError(422, "invalid", f"{field}: {retired} are retired experiences and cannot be retrieved", field)
    return [(found[name][0], None) for name in wanted]
