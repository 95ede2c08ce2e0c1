"""Plain-language explanation of a decision."""

from __future__ import annotations

from collections.abc import Sequence

from memtrial.records import Action, Decision, ExperienceId
from memtrial.trust.gate import GateTest, TrustDecision, TrustStatus

__all__ = ["describe_dial", "describe_trust", "explain"]


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


def explain(decision: Decision, subsets: Sequence[Sequence[ExperienceId]] = ()) -> str:
    gate = describe_trust(decision.trust)
    if decision.action is Action.DIAL and decision.dial is not None:
        return f"{gate}; {describe_dial(decision, subsets)}"
    if decision.action is Action.SUBSET:
        return f"{gate}; best subset {list(decision.subset or ())} has predicted gain {decision.predicted_gain:.4g} > 0: acting on its draft"
    reason = (
        "gate not open"
        if not decision.trust.is_open
        else f"best predicted gain {decision.predicted_gain:.4g} is not > 0"
    )
    if decision.action is Action.REFERENCE:
        return f"{gate}; {reason}: the reference draft (drafts that are not vectors cannot be mixed)"
    return f"{gate}; {reason}: anchored mixture with q = {decision.q:.4g} on the reference"


def describe_dial(decision: Decision, subsets: Sequence[Sequence[ExperienceId]] = ()) -> str:
    """The dial's reading: omega and its evidence, how the memory share is spread, the rest."""
    dial = decision.dial
    assert dial is not None
    omega = dial.trust_weight
    evidence = f"trust weight {omega:.3g} from log e-value {dial.log_evidence:.3g}"
    if decision.action is Action.REFERENCE:
        return f"{evidence}: the reference draft (drafts that are not vectors cannot be blended; memory's draft is played at full trust)"
    fallback = (
        f"anchored mixture with q = {decision.q:.4g} on the reference" if decision.q is not None else "reference draft"
    )
    if omega <= 0.0:
        return f"{evidence}: all on the {fallback}"
    top = max(range(len(dial.combination)), key=lambda i: dial.combination[i])
    named = f" {list(subsets[top])}" if top < len(subsets) else ""
    noise = "no noise estimate yet" if dial.noise_cost is None else f"noise cost {dial.noise_cost:.3g}"
    spread = sum(1 for p in dial.combination if p > 0.0)
    memory = f"{omega:.0%} on {spread} designed draft{'s' if spread != 1 else ''} ({noise}; largest share {dial.combination[top]:.0%} on subset{named}, predicted gain {dial.gains[top]:.4g})"
    if decision.played is not None:  # answers: memory's largest share, played as it is
        return f"{evidence}: full trust: playing the draft of subset{named} (predicted gain {dial.gains[top]:.4g})"
    if omega >= 1.0:
        return f"{evidence}: {memory}"
    return f"{evidence}: {memory}, {1.0 - omega:.0%} on the {fallback}"
