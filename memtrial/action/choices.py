"""What a decision plays, from its frozen plan and its drafts (method 4.5, 4.8, 4.9, 4.11): the decision records.

The rules themselves live in :mod:`memtrial.action.rule` (one definition each, in
batch form); these functions apply them to one plan and build the
:class:`~memtrial.records.Decision` with its explanation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.action.budget import exploit_weights
from memtrial.action.explain import describe_trust, explain
from memtrial.action.rule import (
    acts_on_memory,
    anchored,
    best_subset,
    choose,
    dial_combination,
    dial_gains,
    dial_weights,
)
from memtrial.records import Action, Decision, Dial, ExperienceId, Plan
from memtrial.trust.gate import GateConfig, GateStatistics, trust_weight

__all__ = ["choose_exploit", "choose_portfolio", "choose_scored", "plan_dial"]


def choose_exploit(
    plan: Plan, drafts: NDArray[np.float64], reference: NDArray[np.float64] | None, common: dict[str, Any]
) -> Decision:
    """An exploiting budget decision (method 4.11) from its one or two drafts (:func:`exploit_weights`):
    memory's, played as it is or blended by its share with the reference (a pair: with the memory-free
    draft), or the memory-free one in the anchored mixture with the reference (reference None: drafts
    that cannot be blended, the memory-free draft as it is)."""
    mask, subset, share = plan.masks[-1], plan.subsets[-1], plan.memory_share
    gain = (
        max(plan.dial.gains)
        if plan.dial is not None
        else best_subset(plan.predictions, plan.experience_ids, plan.masks)[1]
    )
    shared: dict[str, Any] = {"predicted_gain": gain, "dial": plan.dial, **common}
    where = "no trial this time (draft budget)"
    mixable = reference is not None and drafts.shape[1] > 0
    if mask != 0:
        blended = mixable and 0.0 < share < 1.0
        anchor = "the memory-free draft" if len(plan.masks) == 2 else "the reference"
        text = (
            f"{where}: memory's draft {list(subset)} with share {share:.4g}, {anchor} with the rest"
            if blended
            else f"{where}: memory's draft {list(subset)} {'alone' if mixable else 'played as it is'}"
        )
        return Decision(
            weights=exploit_weights(plan.masks, drafts, plan.q, reference, share)  # type: ignore[arg-type]
            if blended
            else drafts[-1],
            action=Action.SUBSET if plan.dial is None else Action.DIAL,
            subset=subset,
            mask=mask,
            q=None,
            played=None if mixable else len(plan.masks) - 1,
            explanation=f"{describe_trust(plan.trust)}; {text}" if mixable else text,
            **shared,
        )
    if not mixable:
        return Decision(
            weights=drafts[0],
            action=Action.REFERENCE,
            subset=None,
            mask=None,
            q=None,
            played=0,
            explanation=f"{where}: the memory-free draft [] played as it is",
            **shared,
        )
    assert reference is not None
    text = f"{where}: anchored mixture with q = {plan.q:.4g} on the reference and the memory-free draft"
    return Decision(
        weights=exploit_weights(plan.masks, drafts, plan.q, reference, share),
        action=Action.MIXTURE if plan.dial is None else Action.DIAL,
        subset=None,
        mask=None,
        q=plan.q,
        explanation=f"{describe_trust(plan.trust)}; {text}",
        **shared,
    )


def _played(
    plan: Plan, vectors: NDArray[np.float64], row: int, action: Action, shared: dict[str, Any], *, memory: bool
) -> Decision:
    """A decision that plays one draft as it is: a designed subset's (``memory``) or the reference."""
    subset, mask = (plan.subsets[row], plan.masks[row]) if memory else (None, None)
    return Decision(weights=vectors[row], action=action, subset=subset, mask=mask, q=None, played=row, **shared)


def choose_scored(plan: Plan, vectors: NDArray[np.float64], reference: int) -> Decision:
    """A scored decision's action: the gate or the dial over the designed drafts, the designated
    reference draft as the conservative anchor (mixed with the draft mean where drafts are vectors).

    vectors: (S, m) numeric drafts, or (S, 0) for drafts that cannot be averaged.
    """
    mixable = vectors.shape[1] > 0
    common: dict[str, Any] = {
        "decision_id": plan.decision_id,
        "trust": plan.trust,
        "predictions": dict(plan.predictions),
        "learner_mode": plan.learner_mode,
        "drafts": vectors,
        "reference_index": reference,
    }
    if not plan.trial:
        return choose_exploit(plan, vectors, vectors[reference] if mixable else None, common)
    best, gain = best_subset(plan.predictions, plan.experience_ids, plan.masks)
    if plan.dial is not None:
        dial = plan.dial
        shared: dict[str, Any] = {"predicted_gain": max(dial.gains), "explanation": "", "dial": dial, **common}
        if mixable:
            weights = dial_weights(
                np.array(dial.combination), np.array(dial.trust_weight), np.array(plan.q), vectors[reference], vectors
            )
            # no trust and the reference as the closed share: the blend is the reference draft itself, played
            # as it is (its utility is then known even where only the drafts' utilities are given)
            exact = dial.trust_weight == 0.0 and np.array_equal(weights, vectors[reference])
            decision = Decision(
                weights=weights,
                action=Action.DIAL,
                subset=None,
                mask=None,
                q=plan.q,
                played=reference if exact else None,
                **shared,
            )
        elif dial.trust_weight >= 1.0:  # answers cannot be blended: memory's draft only at full trust
            decision = _played(plan, vectors, int(np.argmax(dial.combination)), Action.DIAL, shared, memory=True)
        else:
            decision = _played(plan, vectors, reference, Action.REFERENCE, shared, memory=False)
        return replace(decision, explanation=explain(decision, plan.subsets))
    shared = {"predicted_gain": gain, "explanation": "", **common}
    if bool(acts_on_memory(np.array([plan.trust.is_open]), np.array([gain]))[0]):
        decision = _played(plan, vectors, best, Action.SUBSET, shared, memory=True)
    elif mixable:
        weights = anchored(plan.q, vectors[reference], vectors)
        decision = Decision(
            weights=weights, action=Action.MIXTURE, subset=None, mask=None, q=plan.q, played=None, **shared
        )
    else:
        decision = _played(plan, vectors, reference, Action.REFERENCE, shared, memory=False)
    return replace(decision, explanation=explain(decision))


def choose_portfolio(plan: Plan, drafts: NDArray[np.float64], reference_index: int | None = None) -> Decision:
    """The gated choice between the best designed subset and the anchored mixture (or the dial's blend).

    drafts: (S, n) mandate-projected drafts, rows aligned with the plan's subsets; reference_index:
    the row of the memory-free draft when it is the reference (None: the plan's reference).
    """
    common: dict[str, Any] = {
        "decision_id": plan.decision_id,
        "trust": plan.trust,
        "predictions": dict(plan.predictions),
        "learner_mode": plan.learner_mode,
        "drafts": drafts,
        "reference_index": reference_index,
    }
    if reference_index is not None:
        plan = replace(plan, reference=drafts[reference_index])
    if not plan.trial:
        return choose_exploit(plan, drafts, plan.reference, common)
    if plan.extra_reference:  # the design's runs are combined; the last draft is the reference alone
        rows = plan.design_rows
        plan = replace(plan, masks=plan.masks[:rows], subsets=plan.subsets[:rows])
        drafts = drafts[:rows]
    if plan.dial is not None:
        dial = plan.dial
        weights = dial_weights(
            np.array(dial.combination), np.array(dial.trust_weight), np.array(plan.q), plan.reference, drafts
        )
        blended = Decision(
            weights=weights,
            action=Action.DIAL,
            subset=None,
            mask=None,
            q=plan.q,
            predicted_gain=max(dial.gains),
            explanation="",
            dial=dial,
            **common,
        )
        return replace(blended, explanation=explain(blended, plan.subsets))
    choice = choose(
        plan.predictions, plan.experience_ids, plan.masks, plan.trust.is_open, plan.q, plan.reference, drafts
    )
    common.update(predicted_gain=choice.gain, weights=choice.weights, explanation="")
    if choice.index is not None:
        decision = Decision(
            action=Action.SUBSET, subset=plan.subsets[choice.index], mask=plan.masks[choice.index], q=None, **common
        )
    else:
        decision = Decision(action=Action.MIXTURE, subset=None, mask=None, q=plan.q, **common)
    return replace(decision, explanation=explain(decision))


def plan_dial(
    gate: GateConfig,
    statistics: GateStatistics,
    noise_cost: float | None,
    ids: Sequence[ExperienceId],
    masks: Sequence[int],
    predictions: Mapping[ExperienceId, float],
) -> Dial:
    """The dial a plan freezes (method 4.8): omega from the e-process so far, kappa from the matured
    decisions, pi from the predictions."""
    omega, log_e = trust_weight(gate, statistics)
    gains = dial_gains(np.array([[predictions[e] for e in ids]]).reshape(1, len(ids)), masks)
    pi = dial_combination(gains, np.array([np.nan if noise_cost is None else noise_cost]), masks)[0]
    return Dial(float(omega), float(log_e), noise_cost, tuple(float(g) for g in gains[0]), tuple(float(p) for p in pi))
