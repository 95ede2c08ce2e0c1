"""What a settlement learns (method 3, step 3), as functions of an engine's settings and running state.

- :class:`Outcome`: the utilities a settled decision revealed (every draft,
  the reference, the draft mean, the chosen weights, the 201 mixtures), with
  what they were computed from;
- :func:`portfolio_outcome` / :func:`scored_outcome`: those utilities from
  prices, or from utilities or an outcome and its rule;
- :func:`learn`: credit each experience (Banzhaf contrasts), score the frozen
  predictions, update the learner, the gate, the fallback and the noise cost;
- :func:`frozen_predictions`: what a plan freezes from the learner.

The engine settles through these, and so does the recomputation after a
correction (:mod:`memtrial.engine.corrections`): one rule for both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.action.fallback import GRID, AnchoredMixture, mixture_weights
from memtrial.action.rule import noise_gain
from memtrial.credit.banzhaf import centre_contrasts
from memtrial.credit.banzhaf import contributions as banzhaf_contrasts
from memtrial.credit.banzhaf import interactions as interaction_contrasts
from memtrial.engine.checks import MAX_UTILITY
from memtrial.engine.config import EngineConfig
from memtrial.errors import InputError
from memtrial.outcomes.mandates import mixture_utilities, normalised, utility
from memtrial.outcomes.scoring import score as score_drafts
from memtrial.records import Decision, DecisionKind, ExperienceId, Plan, Settlement, Time
from memtrial.trust.gate import TrustGate, pearson_score
from memtrial.values import EmpiricalBayesLearner, LearnerMode

__all__ = [
    "NoiseCost",
    "Outcome",
    "Running",
    "frozen_predictions",
    "learn",
    "outcome_of",
    "credit",
    "portfolio_outcome",
    "rescore",
    "scored_outcome",
    "unlearn_sums",
]


class NoiseCost:
    """kappa, the utility cost of one draft's noise: the running mean of each settled
    decision's :func:`~memtrial.action.rule.noise_gain` (O(1) state)."""

    __slots__ = ("count", "total")

    def __init__(self, count: int = 0, total: float = 0.0) -> None:
        self.count, self.total = count, total

    def add(self, gain: float | None) -> None:
        if gain is not None:
            self.count += 1
            self.total += gain

    def remove(self, gain: float | None) -> None:
        """Take back a gain :meth:`add` counted (a corrected outcome replaces it)."""
        if gain is not None:
            self.count -= 1
            self.total -= gain

    @property
    def cost(self) -> float | None:
        return self.total / self.count if self.count else None

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "total": self.total}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NoiseCost:
        return cls(int(data["count"]), float(data["total"]))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a settlement learns from: the utilities of the drafts, the reference, the mean, the chosen
    weights and the mixtures (none for bare utilities), with what they were computed from."""

    draft_utilities: NDArray[np.float64]
    reference_u: float
    mean_u: float | None
    chosen_u: float | None
    mixture_u: NDArray[np.float64]
    prices: NDArray[np.float64]
    outcome: Any = None
    rule: str | None = None
    scored: bool = False


@dataclass(slots=True)
class Running:
    """The running state a settlement updates (an engine's own, or one being recomputed)."""

    learner: EmpiricalBayesLearner
    gate: TrustGate
    fallback: AnchoredMixture
    noise: NoiseCost


def frozen_predictions(learner: EmpiricalBayesLearner, ids: Sequence[ExperienceId]) -> dict[str, Any]:
    """What a plan freezes from the learner: every mode's predictions and the selected mode's (Plan fields)."""
    mode_predictions = learner.predict_modes(ids)
    selected = learner.selected_mode
    return {
        "predictions": dict(zip(ids, mode_predictions[selected], strict=True)),
        "mode_predictions": {m.value: v for m, v in mode_predictions.items()},
        "learner_mode": selected.value,
    }


def portfolio_outcome(config: EngineConfig, plan: Plan, decision: Decision, prices: NDArray[np.float64]) -> Outcome:
    """Every draft, the reference, the draft mean, the chosen weights and the 201 mixtures scored on the
    relative prices (H, n)."""
    draft_mean = decision.drafts[: plan.design_rows].mean(axis=0)
    reference = plan.reference if decision.reference_index is None else decision.drafts[decision.reference_index]
    batch = normalised(np.vstack([decision.drafts, reference, draft_mean, decision.weights]))
    scores = np.asarray(utility(batch, prices, plan.previous, config.risk_aversion, config.fee_bp))
    n_drafts = decision.drafts.shape[0]
    reference_u, mean_u, chosen_u = (float(v) for v in scores[n_drafts : n_drafts + 3])
    mixture_u = mixture_utilities(
        reference, draft_mean, prices, plan.previous, config.risk_aversion, config.fee_bp, GRID
    )
    return Outcome(scores[:n_drafts], reference_u, mean_u, chosen_u, mixture_u, prices.copy())


def scored_outcome(
    decision: Decision, utilities: NDArray[np.float64] | None, outcome: Any, rule: str | None
) -> Outcome:
    """A scored decision's utilities: given, or the rule's scores of the drafts, their mean, the played
    blend and the mixtures."""
    reference_index = decision.reference_index or 0
    mixture_u = np.zeros(0)
    mean_u: float | None = None
    chosen_u: float | None = None
    if utilities is not None:
        draft_utilities = utilities
        if decision.played is not None:
            chosen_u = float(draft_utilities[decision.played])
    else:
        vectors = decision.drafts
        if vectors.shape[1] == 0:
            raise InputError(
                f"rule {rule!r} scores probability vectors; this decision's drafts are not vectors", field="rule"
            )
        if str(rule) == "abs_error" and vectors.shape[1] != 1:  # named here: the drafts, not the rows scored with them
            raise InputError(
                f"rule 'abs_error' scores numbers (vectors of length 1); this decision's {vectors.shape[0]} drafts "
                f"are vectors of length {vectors.shape[1]}: score them with 'brier' or 'log', or give utilities",
                field="rule",
            )
        draft_mean = vectors.mean(axis=0)
        scores = score_drafts(str(rule), outcome, vectors=np.vstack([vectors, draft_mean, decision.weights]))
        largest = float(np.max(np.abs(scores), initial=0.0))
        if not largest <= MAX_UTILITY:  # numbers far apart (abs_error): their scores' squares would overflow
            raise InputError(
                f"outcome: rule {rule!r} scores the drafts on it at up to {largest:g} in absolute value; "
                f"utilities must be at most {MAX_UTILITY:g} (the engine squares their differences)",
                field="outcome",
            )
        draft_utilities = scores[: vectors.shape[0]]
        mean_u, chosen_u = float(scores[-2]), float(scores[-1])
        mixture_u = score_drafts(str(rule), outcome, vectors=mixture_weights(vectors[reference_index], draft_mean))
    reference_u = float(draft_utilities[reference_index])
    return Outcome(draft_utilities, reference_u, mean_u, chosen_u, mixture_u, np.zeros((0, 0)), outcome, rule, True)


def outcome_of(config: EngineConfig, plan: Plan, decision: Decision, settlement: Settlement) -> Outcome:
    """A stored settlement's outcome, recomputed from what it was given (prices, an outcome and rule, or utilities)."""
    if plan.kind is DecisionKind.PORTFOLIO:
        return portfolio_outcome(config, plan, decision, settlement.rel_prices)
    utilities = settlement.draft_utilities if settlement.rule is None else None
    return scored_outcome(decision, utilities, settlement.outcome, settlement.rule)


def learn(config: EngineConfig, plan: Plan, realised: Outcome, settled_at: Time, running: Running) -> Settlement:
    """Credit, score and learn from a settled decision's utilities (the same for every kind)."""
    ids = plan.experience_ids
    draft_utilities = realised.draft_utilities[: plan.design_rows]  # an extra reference draft is not a design run
    masks = list(plan.masks[: plan.design_rows])
    contributions: dict[ExperienceId, float] = {}
    centred: dict[ExperienceId, float] = {}
    interactions: dict[str, float] = {}
    score = None
    learns = plan.trial  # an exploiting budget decision (method 4.11) learns nothing
    if ids and learns:
        contributions, centred = credit(plan, realised)
        if len(ids) >= 2 and config.diagnostics:
            interactions = interaction_contrasts(draft_utilities, masks, len(ids))
        score = running.gate.score_predictions(plan.decision_id, plan.predictions, centred).score
        if config.learner is LearnerMode.AUTO:
            _score_modes(running.learner, plan, centred)
        running.learner.update(plan.decision_id, contributions)
    if (
        learns and realised.mixture_u.size and realised.mean_u is not None
    ):  # a scored decision settled with bare utilities has no mixtures to learn q from
        running.fallback.update(realised.mixture_u, realised.reference_u, realised.mean_u)
    if learns and realised.mean_u is not None:
        running.noise.add(noise_gain(draft_utilities, realised.mean_u))
    return Settlement(
        decision_id=plan.decision_id,
        settled_at=settled_at,
        rel_prices=realised.prices,
        draft_utilities=realised.draft_utilities,
        reference_utility=realised.reference_u,
        mean_utility=realised.mean_u,
        chosen_utility=realised.chosen_u,
        mixture_utilities=realised.mixture_u,
        contributions=contributions,
        centred=centred,
        interactions=interactions,
        score=score,
        values=dict(zip(ids, running.learner.predictions(ids), strict=True)),
        outcome=realised.outcome,
        rule=realised.rule,
        scored=realised.scored,
    )


def credit(plan: Plan, realised: Outcome) -> tuple[dict[ExperienceId, float], dict[ExperienceId, float]]:
    """Each experience's Banzhaf contribution to a learning decision's designed drafts, raw and date-centred
    (what :func:`learn` records; empty for a decision without experiences or one that does not learn)."""
    ids = plan.experience_ids
    if not (ids and plan.trial):
        return {}, {}
    contrast = banzhaf_contrasts(
        realised.draft_utilities[: plan.design_rows], list(plan.masks[: plan.design_rows]), len(ids)
    )
    contributions = dict(zip(ids, (float(c) for c in contrast), strict=True))
    centred = dict(zip(ids, (float(c) for c in centre_contrasts(contrast)), strict=True))
    return contributions, centred


def rescore(config: EngineConfig, plan: Plan, centred: Mapping[ExperienceId, float], running: Running) -> float | None:
    """What :func:`learn` adds to the gate's statistics and the learner's mode scores for a settled
    decision, without a log entry (a replay after a correction; the learner's statistics are learnt
    apart, :mod:`memtrial.engine.corrections`); the gate's score (None: undefined, or no score entry)."""
    if not (plan.experience_ids and plan.trial):
        return None
    keys = list(plan.predictions)
    value = pearson_score([plan.predictions[k] for k in keys], [float(centred[k]) for k in keys])
    if value is not None:
        running.gate.statistics.add(value)
    if config.learner is LearnerMode.AUTO:
        _score_modes(running.learner, plan, centred)
    return value


def unlearn_sums(plan: Plan, realised: Outcome, running: Running) -> None:
    """Take a settled outcome out of the fallback's sums and the noise cost (what :func:`learn` added)."""
    if not plan.trial:
        return
    if realised.mixture_u.size and realised.mean_u is not None:
        running.fallback.remove(realised.mixture_u, realised.reference_u, realised.mean_u)
    if realised.mean_u is not None:
        running.noise.remove(noise_gain(realised.draft_utilities[: plan.design_rows], realised.mean_u))


def _score_modes(learner: EmpiricalBayesLearner, plan: Plan, centred: Mapping[ExperienceId, float]) -> None:
    """Each mode's frozen predictions scored against the realised centred contributions (for ``auto``)."""
    realised = [centred[e] for e in plan.experience_ids]
    for mode, predicted in plan.mode_predictions.items():
        value = pearson_score(predicted, realised)
        if value is not None:
            learner.record_score(mode, value)
