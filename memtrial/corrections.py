"""Corrections (method 4.10): an engine's running state recomputed from its history with one outcome replaced.

Plans and scores are taken in the order the log recorded them (a plan's
predictions depend on the scores before it): each plan's predictions are
derived again from what the learner would then have known, each settlement is
learnt again through :func:`memtrial.learning.learn`, the corrected one with its
new outcome. Settlements of decisions without experiences touch only the
fallback and the noise cost, whose sums do not depend on order, and are
applied after. The result equals the running state of an engine settled with
the corrected outcome from the start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.checks import check_scored, same_scored
from memtrial.config import EngineConfig
from memtrial.errors import InputError, StateError
from memtrial.fallback import AnchoredMixture
from memtrial.history import DecisionEntry, History
from memtrial.learning import (
    NoiseCost,
    Outcome,
    Running,
    frozen_predictions,
    learn,
    outcome_of,
    portfolio_outcome,
    scored_outcome,
)
from memtrial.records import Decision, DecisionKind, ExperienceId, Plan, Settlement, Time
from memtrial.trust import make_gate
from memtrial.values import EmpiricalBayesLearner

__all__ = ["Recomputed", "corrected_outcome", "correction_entry", "recompute"]

Recomputed = tuple[Running, Settlement, int | None]


def recompute(
    config: EngineConfig,
    history: History,
    learner: EmpiricalBayesLearner,
    embeddings: Mapping[ExperienceId, NDArray[np.float64] | None],
    corrected_id: str,
    realised: Outcome,
    settled_at: Time,
) -> Recomputed:
    """(the running state, the corrected settlement, the index of the score entry it supersedes).

    learner: a fresh learner of the engine's settings; embeddings: the
    experiences' embeddings as the engine holds them now (content features
    are those of the experiences held now).
    """
    entries = {entry.decision_id: entry for entry in history.entries_in_order()}
    for experience_id, embedding in embeddings.items():
        if embedding is not None:
            learner.add_features(experience_id, embedding)
    running = Running(learner, make_gate(config.gate), AnchoredMixture(config.fallback), NoiseCost())
    pending: dict[str, Plan] = {}
    scored: set[str] = set()
    corrected: Settlement | None = None
    supersedes: int | None = None

    def stored(decision_id: str) -> DecisionEntry:
        entry = entries.get(decision_id)
        if entry is None:
            raise StateError(
                f"decision {decision_id!r} of the log is not in the history (was it pruned?): the state cannot be recomputed",
                field="history",
            )
        return entry

    def settle(entry: DecisionEntry, plan: Plan) -> Settlement:
        if entry.decision_id == corrected_id:
            return learn(config, plan, realised, settled_at, running)
        assert entry.settlement is not None and entry.decision is not None
        return learn(
            config,
            plan,
            outcome_of(config, entry.plan, entry.decision, entry.settlement),
            entry.settlement.settled_at,
            running,
        )

    for item in history.log_entries():
        decision_id = str(item.payload.get("date"))
        if item.kind == "prediction":
            plan = stored(decision_id).plan
            pending[decision_id] = replace(plan, **frozen_predictions(running.learner, plan.experience_ids))
        elif item.kind == "withdrawal":
            pending.pop(decision_id, None)
        elif item.kind == "score" and decision_id not in scored:
            scored.add(decision_id)
            result = settle(stored(decision_id), pending.pop(decision_id))
            if decision_id == corrected_id:
                corrected, supersedes = result, item.index
    for decision_id, entry in entries.items():
        if entry.settlement is not None and (not entry.plan.experience_ids or not entry.plan.trial):
            result = settle(entry, entry.plan)
            if decision_id == corrected_id:
                corrected = result
    if corrected is None:
        raise StateError(f"decision {corrected_id!r} is settled but the log holds no score for it", field="history")
    return running, corrected, supersedes


def corrected_outcome(
    config: EngineConfig,
    plan: Plan,
    decision: Decision,
    previous: Settlement,
    rel_prices: Any,
    utilities: Any,
    outcome: Any,
    rule: str | None,
) -> Outcome | None:
    """The corrected outcome of a settled decision (what settle takes for its kind), or None when it
    equals the outcome the decision already has."""
    if plan.kind is DecisionKind.PORTFOLIO:
        if rel_prices is None or utilities is not None or rule is not None:
            raise InputError("a portfolio decision is corrected with rel_prices", field="rel_prices")
        prices = np.asarray(rel_prices, dtype=np.float64)
        if previous.rel_prices.shape == prices.shape and np.array_equal(previous.rel_prices, prices):
            return None
        return portfolio_outcome(config, plan, decision, prices)
    if rel_prices is not None:
        raise InputError(
            "a scored decision is corrected with utilities, or an outcome and its rule", field="rel_prices"
        )
    given_utilities = check_scored(plan, utilities, rule)
    if same_scored(previous, given_utilities, outcome, rule):
        return None
    return scored_outcome(decision, given_utilities, outcome, rule)


def correction_entry(decision_id: str, reason: str, supersedes: int | None, corrected: Settlement) -> dict[str, Any]:
    """The log entry of a correction: the reason, the score entry it supersedes, the new score and contributions."""
    return {
        "date": decision_id,
        "reason": reason,
        "supersedes": supersedes,
        "score": corrected.score,
        "realised": [[e, float(c)] for e, c in corrected.centred.items()],
    }
