"""MemTrial and its ablations, run through the library engine; the oracle; the anchored wrapper."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from backtest.methods.base import HALF, Method, Outcome, Scoring, Trajectory, Walk, stacked, without_quarantined
from memtrial.action.fallback import GRID, FallbackVariant, choices_after, running_sums
from memtrial.curation import RetrievalMode
from memtrial.engine.config import ReferenceSource
from memtrial.engine.lifecycle import EngineConfig, MemTrial
from memtrial.outcomes.mandates import mixture_utilities_by_date

__all__ = ["Anchored", "MemTrialMethod", "Oracle"]


class MemTrialMethod(Method):
    """A MemTrial engine walked through a world. With value-aware retrieval or quarantine on (method
    4.12, 4.13) and a world that offers its candidates, the engine ranks them itself (:meth:`MemTrial.rank`
    over the candidates' retrieval scores) and acts on the drafts of its own retrieval; otherwise it
    acts on the world's retrieval. ``retrievals``: the experiences each decision retrieved;
    ``quarantines``: (experience, position of the decision whose settlement quarantined it)."""

    uses_gate = True
    reads_chosen_utility = False

    def __init__(self, scoring: Scoring, method_id: str, config: EngineConfig, features: NDArray[np.float64]) -> None:
        super().__init__(scoring)
        self.id = method_id
        self.engine = MemTrial(config)
        self.calls: list[int] = []  # draft calls of each decision
        self.retrievals: list[tuple[int, ...]] = []
        self.quarantines: list[tuple[int, int]] = []
        self.curates = config.retrieval is RetrievalMode.VALUE_AWARE or config.quarantine.enabled
        for experience, z in enumerate(features):
            self.engine.add_experience(experience, z)

    def _retrieval(self, context: DateContext) -> tuple[tuple[int, ...], NDArray[np.float64]]:
        """The experiences a plan retrieves and the drafts of every mask of them."""
        k = self.engine.config.k
        if self.curates and context.draft_for is not None and context.candidate_scores is not None:
            picks = self.engine.rank(list(context.candidates), k, [float(v) for v in context.candidate_scores])
            retrieved = tuple(int(p.experience_id) for p in picks)
            return retrieved, context.draft_for(retrieved)
        if k > len(context.retrieved) and context.wide_drafts is not None:  # a saturated design's wider retrieval
            retrieved, drafts = context.wide_retrieved[:k], np.asarray(context.wide_drafts)
        else:
            retrieved, drafts = context.retrieved, context.drafts
        return without_quarantined(retrieved, drafts, self.engine.quarantined)  # type: ignore[arg-type]

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        for experience, embedding in context.added:
            self.engine.add_experience(experience, embedding)
        retrieved, drafts = self._retrieval(context)
        self.retrievals.append(tuple(retrieved))
        plan = self.engine.plan(
            f"d{context.index}",
            context.session,
            context.maturity,
            retrieved=list(retrieved),
            reference=None if self.engine.config.reference is ReferenceSource.MEMORY_FREE else context.reference,
            n_assets=context.reference.shape[0]
            if self.engine.config.reference is ReferenceSource.MEMORY_FREE
            else None,
            previous=context.previous,
        )
        self.calls.append(plan.draft_calls)
        decision = self.engine.decide(plan.decision_id, drafts[list(plan.masks)])
        self.last_open = decision.trust.is_open
        self.last_statistic = decision.trust.statistic
        self.last_trust_weight = None if decision.dial is None else decision.dial.trust_weight
        return decision.weights

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        self.engine.settle(f"d{outcome.context.index}", outcome.rel, at=outcome.context.maturity)
        self.engine.prune_settled()
        if self.engine.curator is not None:
            known = {e for e, _ in self.quarantines}
            self.quarantines += [(int(e), outcome.context.index) for e in self.engine.quarantined if e not in known]

    @property
    def quarantining(self) -> bool:
        """Whether its engine keeps a quarantine book (method 4.13)."""
        return self.engine.curator is not None

    def values(self) -> dict[int, float]:
        return {int(e): v for e, v in self.engine.values().items()}

    def draft_calls(self, reference_calls: int) -> float | None:
        """Mean draft calls per decision it made (the world's reference counts when it is used)."""
        if not self.calls:
            return None
        given = 0 if self.engine.config.reference is ReferenceSource.MEMORY_FREE else reference_calls
        return float(np.mean(self.calls)) + given


class Oracle(Method):
    """Knows every experience's type on every date (``type_by_date``, dates by experiences: after a drift,
    the types in force then): acts on the designed subset with the largest (useful - misleading) count if
    positive, else on the reference."""

    id = "oracle"

    def __init__(self, scoring: Scoring, type_by_date: NDArray[np.int_]) -> None:
        super().__init__(scoring)
        self.type_by_date = type_by_date

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        kinds = [int(self.type_by_date[context.index, e]) for e in context.retrieved]
        scored = sorted(HALF, key=lambda m: (-sum(kinds[j] for j in range(4) if m >> j & 1), m.bit_count(), m))
        best = scored[0]
        if sum(kinds[j] for j in range(4) if best >> j & 1) <= 0:
            return context.reference
        return np.asarray(context.drafts[best])


class Anchored(Method):
    """A baseline given MemTrial's closed action: the KL-anchored mixture of the
    reference and the baseline's own weights (q learned from its own history).

    The baseline proposes exactly what it proposes on its own (it learns from
    its proposals, never from the mixture), so a world walks it once and
    anchors every date afterwards: the 201 mixtures of every date are scored
    in one batch and q follows from their running sums (:func:`choices_after`,
    the rule of :meth:`AnchoredMixture.choose`).
    """

    def __init__(self, base: Method) -> None:
        super().__init__(base.scoring)
        self.base, self.id = base, base.id + "_anchored"

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        raise TypeError(f"{self.id} anchors a whole walk at once: ask for its trajectory")

    def trajectory(self, walk: Walk, projected: bool = True) -> Trajectory:
        proposals = walk.trajectory(self.base, projected=False).weights
        mixtures = np.zeros((len(walk.contexts), GRID.size))
        groups: dict[int, list[int]] = {}
        for position, context in enumerate(walk.contexts):
            groups.setdefault(context.reference.shape[0], []).append(position)
        for members in groups.values():
            rows = np.asarray(members)
            mixtures[rows] = mixture_utilities_by_date(
                np.array([walk.contexts[p].reference for p in members]),
                np.asarray(proposals)[rows]
                if isinstance(proposals, np.ndarray)
                else np.array([proposals[p] for p in members]),
                np.array([walk.rels[p] for p in members]),
                np.array([walk.contexts[p].previous for p in members]),
                self.scoring.gamma,
                self.scoring.fee_bp,
                GRID,
            )
        order = [position for kind, position in walk.events if kind == "settle"]
        steps = np.zeros(len(walk.contexts), dtype=np.int64)  # updates before each decision
        settled = 0
        for kind, position in walk.events:
            if kind == "settle":
                settled += 1
            else:
                steps[position] = settled
        in_order = mixtures[order]
        gains, spread = running_sums(in_order, in_order[:, -1], in_order[:, 0])
        q = choices_after(gains, spread, steps, FallbackVariant.FTRL)
        if isinstance(proposals, np.ndarray):  # one universe: every date at once
            references = np.array([context.reference for context in walk.contexts])
            return Trajectory(walk.held_all(q[:, None] * references + (1 - q)[:, None] * proposals, projected))
        weights = [
            walk.held(position, np.asarray(share * context.reference + (1 - share) * proposals[position]), projected)
            for position, (context, share) in enumerate(zip(walk.contexts, q.tolist(), strict=True))
        ]
        return Trajectory(stacked(weights))
