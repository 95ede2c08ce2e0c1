"""Plain-language explanation of a decision."""

from __future__ import annotations

from memtrial.records import Action, Decision
from memtrial.trust import GateTest, TrustDecision, TrustStatus

__all__ = ["describe_trust", "explain"]


def describe_trust(trust: TrustDecision) -> str:
    """One phrase for the gate state, with its statistic and threshold."""
    if trust.test is GateTest.NONE:
        return "no gate (always open)"
    if trust.status is TrustStatus.INSUFFICIENT_EVIDENCE:
        return f"gate {trust.test.value}: insufficient evidence ({trust.n_scored} scores)"
    if trust.test is GateTest.PREQUENTIAL:
        relation = "<" if trust.is_open else ">="
        return f"gate prequential {trust.status.value}: p = {trust.statistic:.4g} {relation} alpha = {trust.threshold:.4g} over {trust.n_scored} scores"
    relation = ">=" if trust.is_open else "<"
    return f"gate anytime {trust.status.value}: e-value = {trust.statistic:.4g} {relation} 1/alpha = {trust.threshold:.4g} over {trust.n_scored} scores"


def explain(decision: Decision) -> str:
    gate = describe_trust(decision.trust)
    if decision.action is Action.SUBSET:
        return f"{gate}; best subset {list(decision.subset or ())} has predicted gain {decision.predicted_gain:.4g} > 0: acting on its draft"
    reason = "gate not open" if not decision.trust.is_open else f"best predicted gain {decision.predicted_gain:.4g} is not > 0"
    return f"{gate}; {reason}: anchored mixture with q = {decision.q:.4g} on the reference"
