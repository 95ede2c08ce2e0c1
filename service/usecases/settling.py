"""Settling a decision: score its outcome and learn from it, or correct a wrong outcome and relearn.

Settling again with the same outcome (by the hash of the settle body) is a
no-op that answers the stored settlement; a different outcome is a conflict,
to be posted as a correction.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from memtrial.outcomes.display import describe_contributions
from memtrial.records import DecisionKind
from memtrial.trust.log import canonical_json
from service.deps import Services
from service.errors import ApiError
from service.history import SqlHistory
from service.idempotency import Idempotency
from service.models import Agent, Decision
from service.modes import DecisionStatus
from service.schemas import (
    CorrectionPublic,
    CorrectionRequest,
    SettlementPublic,
    SettleRequest,
    WarningPublic,
)
from service.scored import check_utilities, rule_settlement
from service.store import as_utc, owned_row, save_engine
from service.tracing import span
from service.universe import Universe
from service.usecases.planning import agent_kind
from service.usecases.unit import agent_write
from service.views import gate_statistic, plan_labels, value_public


def _outcome_arguments(
    services: Services, agent: Agent, row: Decision, engine: Any, body: SettleRequest
) -> dict[str, Any]:
    """The engine's settle (or correct) arguments for a settle body, checked against the decision and the bounds."""
    scored = agent_kind(agent.settings) is DecisionKind.SCORED
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
    if agent_kind(agent.settings) is DecisionKind.SCORED:
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
        status=DecisionStatus.SETTLED,
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
        if row.status == DecisionStatus.SETTLED:
            if row.settle_hash == payload_hash:
                return _answered(row, guard)
            # a body this decision could never be settled with is refused as such (422 naming its field), not
            # answered as another outcome
            engine = services.engines.checkout(session, agent, {row.id: row})
            try:
                _outcome_arguments(services, agent, row, engine, body)
            finally:  # only read: back in the cache at once (the 409 below rolls the transaction back)
                services.engines.checkin(agent.id, agent.state_version, engine)
            raise ApiError(
                409,
                "settlement_conflict",
                f"decision {decision_id!r} was already settled with a different payload (to replace a wrong outcome, post a correction)",
                "body",
            )
        if row.status == DecisionStatus.FAILED:
            raise ApiError(
                409, "conflict", f"decision {decision_id!r} failed ({row.failure}) and cannot be settled", "decision_id"
            )
        if row.status != DecisionStatus.DECIDED:
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
        row.status = DecisionStatus.SETTLED
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
        if row.status != DecisionStatus.SETTLED:
            advice = {
                DecisionStatus.PLANNED: "post its drafts, then settle it",
                DecisionStatus.DECIDED: "settle it instead of correcting it",
            }.get(DecisionStatus(row.status), "it was withdrawn before it was decided and cannot be settled")
            raise ApiError(
                409, "conflict", f"decision {decision_id!r} is {row.status}, not settled: {advice}", "decision_id"
            )
        if row.settle_hash == payload_hash:
            return _answered(row, guard)
        engine = services.engines.checkout(session, agent, {row.id: row})
        arguments = _outcome_arguments(services, agent, row, engine, body)
        settlement = engine.correct(decision_id, reason=body.reason, at=body.settled_at, **arguments)
        written = engine.history
        if isinstance(written, SqlHistory) and written.last_score_row is not None:  # the correction's own entry
            written.last_score_row.statistic = gate_statistic(engine.gate)
        previous = dict(row.settlement or {})
        history = list(previous.pop("corrections", []))
        history.append(CorrectionPublic(reason=body.reason, corrected_at=dt.datetime.now(dt.UTC), superseded=previous))
        public = _settlement_public(
            decision_id, settlement, engine, body, plan_labels(row.plan), history, _warnings(agent, body)
        )
        return _record(services, session, agent, engine, row, guard, payload_hash, public)
