"""Conversions from ORM rows and core records to response bodies."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from memtrial.curation import RetrievalMode
from memtrial.engine.lifecycle import MemTrial
from memtrial.outcomes.display import experience_label
from memtrial.trust.gate import GateTest, TrustDecision, TrustGate
from service.models import Agent, Experience
from service.modes import ExperienceStatus
from service.schemas import (
    AgentPublic,
    ExperiencePublic,
    GatePublic,
    QuarantinePublic,
    QuarantineStatePublic,
    TrustStatePublic,
    ValuePublic,
)
from service.store import as_utc

__all__ = [
    "Z90",
    "agent_public",
    "experience_public",
    "experience_status",
    "gate_statistic",
    "plan_labels",
    "shown",
    "trust_public",
    "value_public",
]


def agent_public(agent: Agent) -> AgentPublic:
    settings: dict[str, Any] = agent.settings
    drafter = settings.get("drafter")
    return AgentPublic(
        id=agent.id,
        name=agent.name,
        kind=settings.get("kind", "portfolio"),
        investor=settings.get("investor"),
        universe=settings.get("universe"),
        outcomes=settings.get("outcomes"),
        design=settings["design"],
        k=settings.get("k", 4),
        gate=GatePublic(**settings["gate"]),
        gate_hash=agent.gate_hash,
        learner=settings["learner"],
        fallback=settings["fallback"],
        fee_bp=settings["fee_bp"],
        action=settings.get("action", "gate"),
        credit=settings.get("credit", "centred"),
        robust=settings.get("robust", False),
        draft_budget=settings.get("draft_budget"),
        draft_horizon=settings.get("draft_horizon"),
        reference=settings.get("reference", "given"),
        answer=settings.get("answer"),
        # agents made before the settings existed retrieve by similarity, without quarantine
        retrieval=settings.get("retrieval", RetrievalMode.SIMILARITY.value),
        quarantine=None if settings.get("quarantine") is None else QuarantineStatePublic(**settings["quarantine"]),
        drafter=None if drafter is None else {k: v for k, v in drafter.items() if k != "api_key"},
        created_at=as_utc(agent.created_at),
    )


def trust_public(trust: TrustDecision) -> TrustStatePublic:
    return TrustStatePublic(**trust.to_dict(), is_open=trust.is_open)


def gate_statistic(gate: TrustGate) -> float | None:
    """The gate's statistic now: the t-test's p-value (from 2 scores) or the e-value; None without a test."""
    if gate.config.test is GateTest.PREQUENTIAL:
        return gate.statistics.p_value()
    if gate.config.test is GateTest.ANYTIME:
        return math.exp(gate.statistics.log_e_value())
    return None


Z90 = 1.6448536269514722  # the 95th percentile of the standard normal: a central 90% interval


def shown(value: float) -> float:
    """A value as the API shows it: a negative zero (a mean shrunk to 0 from below) as 0.0. Adding 0.0 leaves
    every other float as it is; the trust log's payloads are shown as written, for their hashes."""
    return value + 0.0


def value_public(engine: MemTrial, experience_id: str) -> ValuePublic:
    """The empirical-Bayes value: mean, sd, and from the sd a normal 90% interval and P(v > 0)."""
    if experience_id not in engine.experiences:
        return ValuePublic(mean=0.0, sd=None, n=0)
    mean, sd, n = engine.posterior(experience_id)
    mean = shown(mean)
    if sd is None or not sd > 0:
        return ValuePublic(mean=mean, sd=sd, n=n)
    return ValuePublic(
        mean=mean,
        sd=sd,
        n=n,
        lower=shown(mean - Z90 * sd),
        upper=shown(mean + Z90 * sd),
        p_positive=0.5 * (1.0 + math.erf(mean / (sd * math.sqrt(2.0)))),
        interval="empirical_bayes",
    )


def experience_status(active: bool, experience_id: str, engine: MemTrial) -> ExperienceStatus:
    """Retired (by hand) first, then quarantined (by its evidence), else active."""
    if not active:
        return ExperienceStatus.RETIRED
    if experience_id in engine.quarantined:
        return ExperienceStatus.QUARANTINED
    return ExperienceStatus.ACTIVE


def experience_public(
    row: Experience, engine: MemTrial, evidence: Mapping[str, QuarantinePublic] | None = None
) -> ExperiencePublic:
    """An experience with its value and status (``evidence``: the quarantine entries of quarantined ones)."""
    status = experience_status(row.active, row.id, engine)
    quarantined = row.id in engine.quarantined
    return ExperiencePublic(
        status=status.value,
        quarantine=(evidence or {}).get(row.id) if quarantined else None,
        id=row.id,
        external_id=row.external_id,
        text=row.text,
        metadata=row.meta,
        structured=row.structured,
        active=row.active,
        created_at=as_utc(row.created_at),
        value=value_public(engine, row.id),
    )


def plan_labels(plan: dict[str, Any] | None) -> dict[str, str]:
    """Each retrieved experience's label (its text, shortened), by id, from a stored plan."""
    retrieved: list[dict[str, Any]] = [] if plan is None else plan.get("retrieved", [])
    return {r["id"]: experience_label(r.get("text"), r["id"], r.get("external_id")) for r in retrieved}
