"""Decision use cases: plan (client or server drafting), decide, settle, correct, read, list.

Server drafting runs in three steps so that no database lock is held while
the LLM answers: plan and commit, draft concurrently, then decide and commit
(the decision and the key's answer in one transaction). Between them the
request leases its ``Idempotency-Key`` and its planned decision
(:mod:`service.leases`). If any step after planning fails (the drafter, a lock
wait, a conflicting write), the key is released, so a retry with it runs again,
and the plan is withdrawn (status ``failed`` with the reason, a ``withdrawal``
entry closes its registered prediction); then the error answers.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import threading
from typing import Annotated, Any

import numpy as np
from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, TypeAdapter, ValidationError
from sqlalchemy import select
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm import Session

from memtrial.engine.lifecycle import MemTrial
from memtrial.errors import MemtrialError
from memtrial.outcomes.display import describe_contributions, name_experiences
from memtrial.outcomes.mandates import INVESTORS
from memtrial.records import Decision as CoreDecision
from memtrial.records import Plan
from memtrial.trust.log import canonical_json
from service.db import transaction
from service.deps import Services
from service.drafting import Retries, draft_all
from service.errors import ApiError
from service.history import SqlHistory
from service.idempotency import Idempotency
from service.leases import Renewal, abandon
from service.models import Agent, Decision, Experience, new_id, utcnow
from service.pagination import decode_cursor, encode_cursor
from service.prompts import draft_prompts
from service.schemas import (
    CorrectionPublic,
    CorrectionRequest,
    DecisionCreate,
    DecisionList,
    DecisionPublic,
    DecisionRecord,
    DecisionSummary,
    DialPublic,
    PlanPublic,
    PortfolioDrafts,
    RetrievedPublic,
    SettlementPublic,
    SettleRequest,
    SubsetPublic,
    WarningPublic,
    check_portfolio_drafts,
)
from service.scored import check_utilities, chosen_draft, rule_settlement, scored_drafts
from service.store import as_utc, load_agent, owned_row, return_engine, save_engine
from service.tracing import span
from service.universe import Universe
from service.usecases.agents import check_draft_limit
from service.usecases.unit import agent_write
from service.views import gate_statistic, plan_labels, trust_public, value_public

_PORTFOLIO_DRAFTS: TypeAdapter[list[dict[str, float]]] = TypeAdapter(
    Annotated[PortfolioDrafts, AfterValidator(check_portfolio_drafts)]
)


def _kind(settings: dict[str, object]) -> str:
    return str(settings.get("kind", "portfolio"))


def _portfolio_drafts(drafts: list[object]) -> list[dict[str, float]]:
    """Portfolio drafts checked as the request body would check them (same errors, same fields)."""
    try:
        return _PORTFOLIO_DRAFTS.validate_python(drafts)
    except ValidationError as error:
        raise RequestValidationError(
            [{**item, "loc": ("body", "drafts", *item["loc"])} for item in error.errors()]
        ) from None


def plan(
    services: Services, tenant_id: str, agent_id: str, body: DecisionCreate, guard: Idempotency
) -> tuple[PlanPublic, dict[str, object], Retries]:
    """Plan a decision: retrieve, design, freeze the predictions; the plan, the agent's settings and the
    retries server drafting may send (reserved now: :func:`_retries`)."""
    latest = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=services.settings.max_clock_skew_seconds)
    if body.decision_time > latest:
        raise ApiError(
            422,
            "invalid",
            f"decision_time: {body.decision_time.isoformat()} is later than now plus the allowed clock skew "
            f"({services.settings.max_clock_skew_seconds} s): a decision cannot be made in the future",
            "decision_time",
        )
    chosen = body.retrieved_ids is not None or body.retrieved_external_ids is not None
    with span("embedding.encode", texts=0 if chosen else 1):
        context = None if chosen else services.embedder.encode([body.context_text])[0]
    lease = services.settings.idempotency_lease_seconds if body.drafting == "server" else None
    with agent_write(services, tenant_id, agent_id, guard, lease=lease) as (session, agent):
        check_draft_limit(agent.settings, services.settings.max_drafts_per_decision)
        scored = _kind(agent.settings) == "scored"
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
        universe = None if scored else Universe(agent.settings["universe"])
        reference = (
            None
            if universe is None or body.reference_weights is None
            else universe.vector(body.reference_weights, "reference_weights")
        )
        if reference is not None and universe is not None:
            if agent.settings.get("reference", "given") == "memory_free":
                raise ApiError(
                    422,
                    "invalid",
                    "reference_weights: this agent's reference is each decision's memory-free draft",
                    "reference_weights",
                )
            universe.check_mandate(reference, INVESTORS[str(agent.settings["investor"])], "reference_weights")
        if context is None:
            hits: list[tuple[str, float | None]] = list(_chosen_experiences(session, agent, body))
        else:
            k = _retrieval_k(agent)
            with span("retrieval.search", k=k):
                hits = list(services.indexes.search(session, agent, context, k))
        engine = services.engines.checkout(session, agent)
        history = engine.history
        assert isinstance(history, SqlHistory)
        decision_id = new_id()
        history.expect_new(decision_id)
        with span("engine.plan", experiences=len(hits)):
            plan = _engine_plan(engine, decision_id, body, hits, universe, reference)
        with session.no_autoflush:  # the new row is written once, complete, at commit
            rows = session.execute(
                select(Experience.id, Experience.text, Experience.external_id).where(
                    Experience.id.in_(plan.experience_ids)
                )
            ).all()
        texts = {row.id: row.text for row in rows}
        external = {row.id: row.external_id for row in rows}
        public = PlanPublic(
            decision_id=decision_id,
            status="planned",
            decision_time=plan.time,  # type: ignore[arg-type]
            maturity=plan.maturity,  # type: ignore[arg-type]
            retrieved=[RetrievedPublic(id=h, text=texts[h], score=s, external_id=external[h]) for h, s in hits],
            retrieval="server" if context is not None else "client",
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
            predictions={str(e): v for e, v in plan.predictions.items()},
            learner_mode=plan.learner_mode,
            trust=trust_public(plan.trust),
            q=plan.q,
            dial=None if plan.dial is None else DialPublic(**plan.dial.to_dict()),
            trial=plan.trial,
            draft_calls=plan.draft_calls,
        )
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


def _engine_plan(
    engine: MemTrial,
    decision_id: str,
    body: DecisionCreate,
    hits: list[tuple[str, float | None]],
    universe: Universe | None,
    reference: Any,
) -> Plan:
    """The engine's plan over the retrieved experiences: a scored one, or a portfolio over the universe."""
    retrieved = [h for h, _ in hits]
    if universe is None:
        return engine.plan(decision_id, body.decision_time, body.maturity, retrieved=retrieved, kind="scored")
    return engine.plan(
        decision_id,
        body.decision_time,
        body.maturity,
        retrieved=retrieved,
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


def decide(
    services: Services,
    tenant_id: str,
    agent_id: str,
    decision_id: str,
    drafts: list[Any],
    guard: Idempotency,
    reference: int | None = None,
    retries: Retries | None = None,
    *,
    server: bool = False,
) -> DecisionPublic:
    """Act on one draft per designed subset (``server``: the drafts of the server-drafting request that
    planned the decision, completing its key with 201 in the same transaction; ``retries`` those drafts'
    retries, settled with the draft budget here)."""
    limit = services.settings.max_drafts_per_decision
    if len(drafts) > limit:
        raise ApiError(
            422,
            "invalid",
            f"drafts: a decision takes at most {limit} drafts on this server (MEMTRIAL_MAX_DRAFTS_PER_DECISION), got {len(drafts)}",
            "drafts",
        )
    with agent_write(services, tenant_id, agent_id, guard, claim=not server) as (session, agent):
        row = owned_row(session, Decision, agent, decision_id, "decision")
        if row.status == "settled":
            raise ApiError(409, "conflict", f"decision {decision_id!r} is already settled", "decision_id")
        if not server and row.status == "planned" and row.drafting_until is not None:
            raise ApiError(
                409,
                "conflict",
                f"decision {decision_id!r} is being drafted by the server (it was planned with drafting 'server'); "
                "its own request posts its drafts",
                "decision_id",
            )
        if _kind(agent.settings) == "scored":
            vectors = scored_drafts(agent.settings, drafts)
            engine = services.engines.checkout(session, agent, {row.id: row})
            with span("engine.decide", drafts=len(drafts)):
                if vectors is not None:
                    decision = engine.decide_scored(
                        decision_id, vectors=vectors, reference=0 if reference is None else reference
                    )
                else:
                    decision = engine.decide_scored(
                        decision_id, n_drafts=len(drafts), reference=0 if reference is None else reference
                    )
            public = _decision_public(row, decision, None, drafts, chosen_draft(agent.settings, drafts, decision))
        else:
            if reference is not None:
                raise ApiError(
                    422,
                    "invalid",
                    "reference: only scored decisions designate a reference draft (a portfolio decision anchors on its reference weights)",
                    "reference",
                )
            universe = Universe(agent.settings["universe"])
            matrix = [universe.vector(draft, f"drafts[{i}]") for i, draft in enumerate(_portfolio_drafts(drafts))]
            engine = services.engines.checkout(session, agent, {row.id: row})
            with span("engine.decide", drafts=len(matrix)):
                decision = engine.decide(decision_id, matrix)
            public = _decision_public(row, decision, universe)
        if row.decision is None:
            row.decision = public.model_dump(mode="json", exclude={"plan"})
            row.status = "decided"
            row.drafting_until = None
        guard.complete(201 if server else 200, public)
        if retries is None:
            return_engine(session, agent, engine, services.engines)  # deciding changes no running state
        else:  # the retries not sent go back to the draft budget's credit
            engine.release_calls(decision_id, retries.used + retries.left, retries.used)
            save_engine(session, agent, engine, services.engines, head_only=True)
        return public


def _decision_public(
    row: Decision,
    decision: CoreDecision,
    universe: Universe | None,
    drafts: list[Any] | None = None,
    chosen: Any = None,
) -> DecisionPublic:
    return DecisionPublic(
        decision_id=row.id,
        status="decided",
        weights=None if universe is None else universe.mapping(decision.weights),
        action=decision.action.value,
        subset=None if decision.subset is None else [str(e) for e in decision.subset],
        mask=decision.mask,
        q=decision.q,
        trust=trust_public(decision.trust),
        predictions={str(e): v for e, v in decision.predictions.items()},
        predicted_gain=decision.predicted_gain,
        learner_mode=decision.learner_mode,
        explanation=name_experiences(decision.explanation, plan_labels(row.plan)),
        drafts=list(drafts or []) if universe is None else [universe.mapping(d) for d in decision.drafts],
        dial=None if decision.dial is None else DialPublic(**decision.dial.to_dict()),
        plan=PlanPublic(**row.plan),
        chosen=chosen,
        played=decision.played,
        reference=decision.reference_index,
        draft_calls=decision.draft_calls,
    )


async def create(
    services: Services, tenant_id: str, agent_id: str, body: DecisionCreate, request: Request, key: str | None
) -> PlanPublic | DecisionPublic:
    """Plan a decision; with server drafting, draft through the agent's provider and decide."""
    provider = None
    if body.drafting == "server":
        with transaction(services.sessions) as session:
            drafter = load_agent(session, tenant_id, agent_id, lock=False).settings.get("drafter")
        if drafter is None:
            raise ApiError(
                422, "invalid", "drafting: this agent has no drafter configured; use client drafting", "drafting"
            )
        provider = services.providers.get(str(drafter.get("provider")))
        if provider is None:
            raise ApiError(
                422,
                "invalid",
                f"drafting: the agent's provider {drafter.get('provider')!r} is not configured on this server; update the agent's drafter",
                "drafting",
            )
    guard = Idempotency(key, tenant_id, request, body)
    planned, settings, retries = await run_in_threadpool(plan, services, tenant_id, agent_id, body, guard)
    if body.drafting == "client":
        return planned
    assert provider is not None
    system, prompts, parse = draft_prompts(settings, body.context_text, [s.texts for s in planned.subsets])
    decision_id = planned.decision_id
    with Renewal(services, guard, decision_id):
        try:
            drafts = await draft_all(
                provider,
                settings["drafter"],  # type: ignore[arg-type]
                system,
                prompts,
                parse,
                services.settings.llm_timeout_seconds,
                retries,
            )
            return await run_in_threadpool(
                decide, services, tenant_id, agent_id, decision_id, drafts, guard, None, retries, server=True
            )
        except asyncio.CancelledError:  # the server is stopping: let go without waiting on it
            arguments = (
                services,
                tenant_id,
                agent_id,
                decision_id,
                guard,
                "the server stopped before deciding",
                retries,
            )
            threading.Thread(target=abandon, args=arguments, name="drafting-abandon", daemon=True).start()
            raise
        except Exception as failure:
            reason = _failure_reason(failure)
            await run_in_threadpool(abandon, services, tenant_id, agent_id, decision_id, guard, reason, retries)
            raise


def _failure_reason(failure: Exception) -> str:
    """Why a server-drafted decision failed, in words that reveal no request content."""
    if isinstance(failure, ApiError | MemtrialError):
        return failure.message
    if isinstance(failure, OperationalError | PoolTimeoutError):
        return "the database did not answer in time while deciding (the agent was locked by another writer too long)"
    return f"the server failed while deciding ({type(failure).__name__})"


def _outcome_arguments(
    services: Services, agent: Agent, row: Decision, engine: Any, body: SettleRequest
) -> dict[str, Any]:
    """The engine's settle (or correct) arguments for a settle body, checked against the decision and the bounds."""
    scored = _kind(agent.settings) == "scored"
    if scored and (body.prices is not None or body.returns is not None):
        field = "prices" if body.prices is not None else "returns"
        raise ApiError(
            422, "invalid", f"{field}: a scored decision is settled with utilities, or an outcome and its rule", field
        )
    if not scored and (body.utilities is not None or body.rule is not None):
        field = "utilities" if body.utilities is not None else "rule"
        raise ApiError(422, "invalid", f"{field}: a portfolio decision is settled with prices or returns", field)
    settings = services.settings
    if not scored:
        universe = Universe(agent.settings["universe"])
        kind = "prices" if body.prices is not None else "returns"
        request = row.request or {}
        horizon = int(request["horizon"]) if request.get("horizon_checked") else None
        series = body.prices if body.prices is not None else body.returns or {}
        return {"rel_prices": universe.relative_prices(series, kind, horizon, settings.max_session_return)}
    drafts = list((row.decision or {}).get("drafts", []))
    entry = engine.history.get(row.id)
    vectors = entry is not None and entry.decision is not None and entry.decision.drafts.shape[1] > 0
    if body.utilities is not None:
        if len(body.utilities) != len(drafts):
            raise ApiError(
                422, "invalid", f"utilities: give one per draft ({len(drafts)}), got {len(body.utilities)}", "utilities"
            )
        check_utilities(body.utilities, settings.max_abs_utility, "utilities")
        return {"utilities": np.array(body.utilities)}
    assert body.rule is not None
    arguments = rule_settlement(agent.settings, drafts, vectors, body.rule, body.outcome, settings.max_abs_utility)
    if "utilities" in arguments:
        check_utilities(arguments["utilities"], settings.max_abs_utility, "outcome")
    return arguments


def _warnings(agent: Agent, body: SettleRequest) -> list[WarningPublic]:
    """What a portfolio settle body (already accepted) holds that looks wrong: returns of 50% a session or
    more, likely percentages given as fractions."""
    if _kind(agent.settings) == "scored":
        return []
    kind = "prices" if body.prices is not None else "returns"
    series = body.prices if body.prices is not None else body.returns or {}
    suspect = Universe(agent.settings["universe"]).suspect_returns(series, kind)
    return [WarningPublic(field=field, message=message) for field, message in suspect]


def _settlement_public(
    decision_id: str,
    settlement: Any,
    engine: Any,
    body: SettleRequest,
    labels: dict[str, str],
    corrections: list[Any] | None = None,
    warnings: list[WarningPublic] | None = None,
) -> SettlementPublic:
    contributions = {str(e): c for e, c in settlement.contributions.items()}
    return SettlementPublic(
        decision_id=decision_id,
        status="settled",
        settled_at=settlement.settled_at,
        draft_utilities=[float(u) for u in settlement.draft_utilities],
        reference_utility=settlement.reference_utility,
        draft_mean_utility=settlement.mean_utility,
        chosen_utility=settlement.chosen_utility,
        contributions=contributions,
        contribution_labels={e: labels.get(e, e) for e in contributions},
        explanation=describe_contributions(contributions, labels),
        centred={str(e): c for e, c in settlement.centred.items()},
        interactions=dict(settlement.interactions),
        score=settlement.score,
        values={str(e): value_public(engine, str(e)) for e in settlement.contributions},
        outcome=body.outcome,
        rule=body.rule,
        corrections=corrections or [],
        warnings=warnings or [],
    )


def _payload_hash(body: SettleRequest) -> str:
    """What identifies an outcome: the settle body without a correction's reason."""
    return hashlib.sha256(canonical_json(body.model_dump(mode="json", exclude={"reason"})).encode()).hexdigest()


def _check_settled_at(body: SettleRequest) -> dt.datetime:
    now = dt.datetime.now(dt.UTC)
    if body.settled_at is not None and body.settled_at > now + dt.timedelta(minutes=1):
        raise ApiError(422, "invalid", "settled_at: cannot be in the future", "settled_at")
    return now


def _answered(row: Decision, guard: Idempotency) -> SettlementPublic:
    """The settlement a decision already holds, answered again (the same outcome twice is a no-op)."""
    public = SettlementPublic(**(row.settlement or {}))
    guard.complete(200, public)
    return public


def _record(
    services: Services,
    session: Session,
    agent: Agent,
    engine: Any,
    row: Decision,
    guard: Idempotency,
    payload_hash: str,
    public: SettlementPublic,
) -> SettlementPublic:
    """Store a settlement (new or corrected) on its row with the hash of its outcome, and the engine."""
    row.settlement = public.model_dump(mode="json")
    row.settle_hash = payload_hash
    guard.complete(200, public)
    save_engine(session, agent, engine, services.engines)
    return public


def settle(
    services: Services, tenant_id: str, agent_id: str, decision_id: str, body: SettleRequest, guard: Idempotency
) -> SettlementPublic:
    """Score a matured decision and learn from it (settling again with the same payload is a no-op)."""
    payload_hash = _payload_hash(body)
    now = _check_settled_at(body)
    with agent_write(services, tenant_id, agent_id, guard) as (session, agent):
        row = owned_row(session, Decision, agent, decision_id, "decision")
        if row.status == "settled":
            if row.settle_hash == payload_hash:
                return _answered(row, guard)
            raise ApiError(
                409,
                "settlement_conflict",
                f"decision {decision_id!r} was already settled with a different payload (to replace a wrong outcome, post a correction)",
                "body",
            )
        if row.status == "failed":
            raise ApiError(
                409, "conflict", f"decision {decision_id!r} failed ({row.failure}) and cannot be settled", "decision_id"
            )
        if row.status != "decided":
            raise ApiError(
                409,
                "conflict",
                f"decision {decision_id!r} has no drafts yet: post its drafts before settling",
                "decision_id",
            )
        engine = services.engines.checkout(session, agent, {row.id: row})
        arguments = _outcome_arguments(services, agent, row, engine, body)
        maturity = as_utc(row.maturity)
        if body.settled_at is None and maturity > now:
            raise ApiError(
                409,
                "premature_settlement",
                f"decision {decision_id!r} matures at {maturity.isoformat()}; its outcome cannot be known yet",
                "settled_at",
            )
        settled_at = maturity if body.settled_at is None else body.settled_at
        history = engine.history
        assert isinstance(history, SqlHistory)
        with span("engine.settle"):
            if "rel_prices" in arguments:
                settlement = engine.settle(decision_id, arguments["rel_prices"], at=settled_at)
            else:
                settlement = engine.settle_scored(decision_id, at=settled_at, **arguments)
        if history.last_score_row is not None:
            history.last_score_row.statistic = gate_statistic(engine.gate)
        row.status = "settled"
        return _record(
            services,
            session,
            agent,
            engine,
            row,
            guard,
            payload_hash,
            _settlement_public(
                decision_id, settlement, engine, body, plan_labels(row.plan), warnings=_warnings(agent, body)
            ),
        )


def correct(
    services: Services, tenant_id: str, agent_id: str, decision_id: str, body: CorrectionRequest, guard: Idempotency
) -> SettlementPublic:
    """Replace a settled decision's wrong outcome and relearn (the same outcome again is a no-op)."""
    payload_hash = _payload_hash(body)
    _check_settled_at(body)
    with agent_write(services, tenant_id, agent_id, guard) as (session, agent):
        row = owned_row(session, Decision, agent, decision_id, "decision")
        if row.status != "settled":
            raise ApiError(
                409,
                "conflict",
                f"decision {decision_id!r} is {row.status}, not settled: settle it instead of correcting it",
                "decision_id",
            )
        if row.settle_hash == payload_hash:
            return _answered(row, guard)
        engine = services.engines.checkout(session, agent, {row.id: row})
        arguments = _outcome_arguments(services, agent, row, engine, body)
        settlement = engine.correct(decision_id, reason=body.reason, at=body.settled_at, **arguments)
        previous = dict(row.settlement or {})
        history = list(previous.pop("corrections", []))
        history.append(CorrectionPublic(reason=body.reason, corrected_at=dt.datetime.now(dt.UTC), superseded=previous))
        public = _settlement_public(
            decision_id, settlement, engine, body, plan_labels(row.plan), history, _warnings(agent, body)
        )
        return _record(services, session, agent, engine, row, guard, payload_hash, public)


def list_page(
    services: Services,
    tenant_id: str,
    agent_id: str,
    limit: int,
    cursor: str | None,
    status: str | None,
    maturity_before: dt.datetime | None,
) -> DecisionList:
    """The agent's decisions, oldest first, a page at a time."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        query = select(Decision).where(Decision.agent_id == agent.id)
        if status is not None:
            query = query.where(Decision.status == status)
        if maturity_before is not None:
            if maturity_before.tzinfo is None:
                raise ApiError(
                    422, "invalid", "maturity_before: give a timezone (e.g. 2024-01-31T21:00:00Z)", "maturity_before"
                )
            try:
                bound = maturity_before.astimezone(dt.UTC)
            except OverflowError:
                raise ApiError(
                    422, "invalid", "maturity_before: outside the supported range", "maturity_before"
                ) from None
            query = query.where(Decision.maturity < bound)
        if cursor is not None:
            query = query.where(Decision.seq > decode_cursor(cursor, "decisions", int))
        rows = session.scalars(query.order_by(Decision.seq).limit(limit + 1)).all()
        items = [
            DecisionSummary(
                decision_id=row.id,
                status=row.status,  # type: ignore[arg-type]
                decision_time=as_utc(row.decision_time),
                maturity=as_utc(row.maturity),
                action=None if row.decision is None else row.decision.get("action"),
                chosen_utility=None if row.settlement is None else row.settlement.get("chosen_utility"),
                created_at=as_utc(row.created_at),
                failure=row.failure,
            )
            for row in rows[:limit]
        ]
        more = len(rows) > limit
        return DecisionList(
            items=items, next_cursor=encode_cursor("decisions", rows[limit - 1].seq) if more else None, limit=limit
        )


def record(services: Services, tenant_id: str, agent_id: str, decision_id: str) -> DecisionRecord:
    """A decision as far as it has got: its plan, its decision, its settlement."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        row = owned_row(session, Decision, agent, decision_id, "decision")
        return DecisionRecord(
            decision_id=row.id,
            status=row.status,
            failure=row.failure,
            plan=None if row.plan is None else PlanPublic(**row.plan),
            context_text=(row.request or {}).get("context_text"),
            decision=row.decision,
            settlement=None if row.settlement is None else SettlementPublic(**row.settlement),
        )
