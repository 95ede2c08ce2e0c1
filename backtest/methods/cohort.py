"""MemTrial variants whose plans follow their own state, walked in lockstep over many worlds (a cohort).

The replay (:mod:`backtest.methods.replay`) computes a variant's whole calendar at once, which needs every
plan to be known up front: the world's retrieval, the whole design at every decision. A variant whose
plans follow what it has learnt cannot be replayed so: value-aware retrieval ranks by its own values and
trust (method 4.12), a quarantine book takes experiences out of retrieval (4.13, 4.14), and a draft budget
makes a plan a trial or not from its credit and from what the learner holds (4.11). Each decision of such
a variant depends on the settlements before it.

Worlds of one calendar can still be walked together, one decision at a time. A :class:`Cohort` holds the
state of one variant in every world of a batch (a :class:`Lane` each) and takes each step of the calendar
for all of them at once: the value fits of every world in one ``fit_many`` call per number of features
(:func:`~memtrial.values.refit_learners`), the retrieval's ranking (:func:`~memtrial.curation.rank_orders`),
the trust weights and the dial's combinations, and the settlements' utilities, contrasts, scores and noise
gains, each an array over the worlds. What is per world by nature stays per world: its quarantine book, its
draft credit, its learner's running statistics and the drafts of its retrieval.

Variants that differ only in what they play from the same plans (the reference of the closed share and the
fallback: :func:`learning_key`) learn the same things, so one walk serves them all when none has a draft
budget (whose trials follow what it spends): the default and its memory-free-reference twin, say.

Every number comes from the core's own functions, which give each item of a batch exactly its result
alone, so each world's decisions, gate states, values, retrievals and quarantines are those of a
:class:`~memtrial.engine.lifecycle.MemTrial` engine walked through that world alone
(``tests/backtest/test_cohort.py`` checks it on every regime, with and without a budget).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from backtest.methods.base import Method, Scoring, Trajectory, Walk, calendar, stacked, without_quarantined
from memtrial.action.budget import DraftCredit, dial_memory_rows, exploit_weights, is_fresh, plan_budget
from memtrial.action.fallback import GRID, AnchoredMixture, FallbackVariant
from memtrial.action.rule import ActionRule, dial_combination, dial_gains, dial_weights, noise_gains
from memtrial.credit.banzhaf import centre_contrasts, contributions_by_date
from memtrial.credit.design import plan_masks, validate_masks
from memtrial.curation import Curator, RetrievalMode, contribution_counts, rank_orders
from memtrial.engine.config import EngineConfig, ReferenceSource
from memtrial.outcomes.mandates import mixture_utilities_by_date, normalised, utilities_by_date
from memtrial.records import Dial, ExperienceId
from memtrial.trust.gate import GateSeries, GateTest, add_scores, gate_states, log_e_values, pearson_scores
from memtrial.values import CreditBasis, EmpiricalBayesLearner, LearnerMode, refit_learners, selected_modes
from memtrial.values.fayherriot import SpectraCache

#: the learners' eigendecompositions, shared by the cohorts a process walks: the worlds of one calendar under
#: several investors learn from the same contributions until their plans part (in a null regime, never)
SPECTRA = SpectraCache()

__all__ = ["Cohort", "CohortMember", "Lane", "learning_key", "serves"]

MODES = (LearnerMode.IDENTITY, LearnerMode.CONTENT)


def serves(config: EngineConfig) -> bool:
    """Whether a cohort walks a configuration: the trust dial (method 4.8) under the anytime test or none."""
    return config.action is ActionRule.DIAL and config.gate.test in (GateTest.ANYTIME, GateTest.NONE)


def learning_key(config: EngineConfig) -> EngineConfig | tuple[EngineConfig]:
    """What a variant's walk learns from: its configuration less the reference and the fallback, which change
    only what is played; a variant at a draft budget is its own (what it plays decides what it can afford)."""
    if config.draft_budget is not None:
        return (config,)
    return replace(config, reference=ReferenceSource.GIVEN, fallback=FallbackVariant.REF)


@dataclass(eq=False)
class Lane:
    """One world a cohort walks: its presented dates, the realised prices of each by position (read when the
    date settles) and the content features of the experiences known from the start (experience e is row e)."""

    contexts: Sequence[DateContext]
    outcome: Callable[[int], NDArray[np.float64]]
    features: NDArray[np.float64]


@dataclass(slots=True)
class _Plan:
    """What one world's plan froze: the experiences, the designed masks, whether it learns, its predictions
    (selected mode, then every fitted mode), the design's drafts, the previous book, and each variant's
    reference (what its closed share and fallback read)."""

    ids: tuple[int, ...]
    masks: tuple[int, ...]
    trial: bool
    predictions: NDArray[np.float64]
    modes: dict[LearnerMode, NDArray[np.float64]]
    drafts: NDArray[np.float64]
    previous: NDArray[np.float64]
    references: list[NDArray[np.float64]] = field(default_factory=list)


_Frozen = tuple[NDArray[np.float64], dict[LearnerMode, NDArray[np.float64]]]  # (selected mode's, every mode's)
Draw = Callable[[Sequence[int]], NDArray[np.float64]]  # the drafts of the given masks of a plan's retrieval


def _rows(drafts: NDArray[np.float64]) -> Draw:
    """The drafts of a retrieval's masks, read off its array of every mask's."""
    return lambda masks: drafts[list(masks)]


@dataclass(slots=True)
class _Candidates:
    """A world's candidates on one date and what the ranking and the plan read of each: similarity, value mean
    and sd (0 where unknown), the contributions learnt from, whether the sd is known, each mode's mean."""

    ids: list[int]
    similarity: NDArray[np.float64]
    means: NDArray[np.float64]
    sds: NDArray[np.float64]
    counts: NDArray[np.int64]
    known: NDArray[np.bool_]
    modes: dict[LearnerMode, NDArray[np.float64]]


class _World:
    """One world's engine state in a cohort (what a MemTrial engine holds, less its log and history)."""

    def __init__(self, config: EngineConfig, lane: Lane, players: Sequence[EngineConfig]) -> None:
        self.lane = lane
        self.learner = EmpiricalBayesLearner(
            config.learner,
            n_components=config.n_components,
            centre=config.credit is CreditBasis.CENTRED,
            robust=config.robust,
        )
        self.curator = Curator(config.quarantine) if config.quarantine.enabled else None
        self.credit = DraftCredit()
        self.fallbacks = [AnchoredMixture(player.fallback) for player in players]
        self.experiences: list[int] = []
        self.plans: dict[int, _Plan] = {}
        self.weights: list[list[NDArray[np.float64]]] = [[np.zeros(0)] * len(lane.contexts) for _ in players]
        self.retrievals: list[tuple[int, ...]] = []
        self.calls: list[list[int]] = [[] for _ in players]
        self.quarantines: list[tuple[int, int]] = []
        self.revision = 0  # counts what changes the values read: contributions, experiences, the book
        self.read: tuple[tuple[object, ...], _Candidates] | None = None  # the last values read, by revision
        self.quarantined: frozenset[int] = frozenset()  # in quarantine now
        self.changed: frozenset[int] = frozenset()  # with a detected change (values learnt since it: method 4.14)
        for experience, z in enumerate(lane.features):
            self.add(experience, z)

    def add(self, experience: int, embedding: NDArray[np.float64]) -> None:
        self.learner.add_features(experience, np.asarray(embedding, dtype=np.float64))
        self.experiences.append(experience)
        self.revision += 1

    def learn(self, decision: str, contributions: dict[ExperienceId, float]) -> None:
        """A settled trial's contributions to the learner (and, its quarantine on, to its book)."""
        self.learner.update(decision, contributions)
        self.revision += 1

    def observe(self, index: int, contributions: dict[ExperienceId, float]) -> None:
        """A settled trial's contributions to the quarantine book; the quarantines and changes it made."""
        assert self.curator is not None
        self.revision += 1  # the values learnt since a change move with every contribution
        if not self.curator.observe(f"d{index}", contributions):
            return
        known = {e for e, _ in self.quarantines}
        self.quarantines += [(int(e), index) for e in self.curator.quarantined if e not in known]
        self.quarantined = frozenset(int(e) for e in self.curator.quarantined)
        self.changed = frozenset(int(e) for e, x in self.curator.evidence.items() if x.changed_at is not None)


class Cohort:
    """MemTrial variants (``configs``: method id -> configuration, one :func:`learning_key`) walked through every
    world of ``lanes`` at once, the worlds sharing one calendar (the same sessions and maturities). :meth:`run`
    walks them; :meth:`members` gives each world's method of a variant."""

    def __init__(self, configs: Mapping[str, EngineConfig], scoring: Scoring, lanes: Sequence[Lane]) -> None:
        # one player per distinct configuration: two ids of one setting (the default at a budget and that
        # budget's variant) walk as one, as a budgeted walk serves a single player
        self.players: list[EngineConfig] = []
        self.player_of: dict[str, int] = {}
        for method_id, config in configs.items():
            same = [p for p, player in enumerate(self.players) if player == config]
            if not same:
                self.players.append(config)
            self.player_of[method_id] = same[0] if same else len(self.players) - 1
        self.ids = list(configs)
        if self.players[0].draft_budget is not None and len(self.players) > 1:
            raise ValueError(f"a budgeted walk serves one setting, not those of {self.ids!r}: walk them apart")
        for method_id, config in configs.items():
            if not serves(config):
                raise ValueError(f"a cohort walks the trust dial under the anytime test or none, not {method_id!r}")
            if learning_key(config) != learning_key(self.players[0]):
                raise ValueError(f"variant {method_id!r} learns otherwise than {self.ids[0]!r}: walk it apart")
        config = self.players[0]
        self.config, self.scoring, self.lanes = config, scoring, list(lanes)
        first = [(c.session, c.maturity) for c in self.lanes[0].contexts]
        for lane in self.lanes[1:]:
            if [(c.session, c.maturity) for c in lane.contexts] != first:
                raise ValueError("the worlds of a cohort must share one calendar")
        self.worlds = [_World(config, lane, self.players) for lane in self.lanes]
        size = len(self.worlds)
        bets = np.asarray(config.gate.bets, dtype=np.float64)
        self.bets = bets
        self.log_growth = np.zeros((size, bets.size))
        self.n_scored = np.zeros(size, dtype=np.int64)
        self.noise_count = np.zeros(size, dtype=np.int64)
        self.noise_total = np.zeros(size)
        self.opens: list[list[bool]] = [[] for _ in self.worlds]
        self.statistics: list[list[float]] = [[] for _ in self.worlds]
        self.omegas: list[list[float]] = [[] for _ in self.worlds]
        self.values: list[dict[int, float]] = []
        self._designs: dict[int, tuple[int, ...]] = {}
        self._ran = False

    def members(self, method_id: str) -> list[CohortMember]:
        """Each world's method of the variant ``method_id``, in the order of the lanes (they walk the cohort
        when first asked)."""
        player = self.player_of[method_id]
        return [CohortMember(self.scoring, method_id, self, index, player) for index in range(len(self.worlds))]

    # -- the walk --------------------------------------------------------------------------------
    def run(self) -> None:
        """Walk every world's calendar once (the first time a member asks)."""
        if self._ran:
            return
        self._ran = True
        for kind, position in calendar(self.lanes[0].contexts):
            if kind == "decide":
                self._decide(position)
            else:
                self._settle(position)
        refit_learners([world.learner for world in self.worlds], SPECTRA)
        for world in self.worlds:
            self.values.append(dict(zip(world.experiences, world.learner.predictions(world.experiences), strict=True)))

    def _design(self, retrieved: int) -> tuple[int, ...]:
        """The masks a plan of ``retrieved`` experiences designs (plan_masks, built once per number)."""
        masks = self._designs.get(retrieved)
        if masks is None:
            masks = self._designs[retrieved] = tuple(plan_masks(self.config.design, self.config.k, retrieved))
        return masks

    def _trust(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]:
        """Every world's (omega, log K_t, gate open, statistic) now (:func:`~memtrial.trust.gate.gate_states`)."""
        log_e = log_e_values(self.log_growth)
        is_open, statistic, omega = gate_states(self.config.gate, GateSeries(self.n_scored, log_e, None))
        return omega, log_e, is_open, statistic

    def _decide(self, position: int) -> None:
        config = self.config
        for world in self.worlds:
            for experience, embedding in world.lane.contexts[position].added:
                world.add(int(experience), embedding)
        refit_learners([world.learner for world in self.worlds], SPECTRA)
        omega, log_e, is_open, statistic = self._trust()
        selected = selected_modes([world.learner for world in self.worlds])
        retrieved = self._retrieve(position, omega, selected)
        costs = np.where(self.noise_count > 0, self.noise_total / np.maximum(self.noise_count, 1), np.nan)
        frozen = [plan for _, _, plan in retrieved]
        # the dial of every world (plan_dial's rule), a batch per design
        designs = [self._design(len(ids)) for ids, _, _ in retrieved]
        dials: list[Dial] = [None] * len(self.worlds)  # type: ignore[list-item]
        memories: list[tuple[int | None, float]] = [(None, 0.0)] * len(self.worlds)
        for masks, rows in _groups(designs):
            predictions = np.array([frozen[row][0] for row in rows]).reshape(len(rows), -1)
            gains = dial_gains(predictions, masks)
            pi = dial_combination(gains, costs[rows], masks)
            if config.draft_budget is not None:  # an exploiting plan's memory row (memory_row's rule)
                for row, memory in zip(rows, dial_memory_rows(omega[rows], predictions), strict=True):
                    memories[row] = memory
            for at, row in enumerate(rows):
                cost = None if np.isnan(costs[row]) else float(costs[row])
                dials[row] = Dial(
                    float(omega[row]),
                    float(log_e[row]),
                    cost,
                    tuple(float(g) for g in gains[at]),
                    tuple(float(p) for p in pi[at]),
                )
        trials: list[tuple[int, int, _Plan, Dial, NDArray[np.float64], float]] = []
        for row, world in enumerate(self.worlds):
            context = world.lane.contexts[position]
            ids, draw, (predictions, modes) = retrieved[row]
            world.retrievals.append(ids)
            self.opens[row].append(bool(is_open[row]))
            self.statistics[row].append(float(statistic[row]))
            self.omegas[row].append(dials[row].trust_weight)
            previous = np.asarray(context.previous, dtype=np.float64)
            if config.draft_budget is None:  # every plan a trial, each variant its reference
                plan = self._plan(world, context, ids, draw, designs[row], predictions, modes, previous)
                for player, reference in enumerate(plan.references):
                    trials.append((row, player, plan, dials[row], reference, world.fallbacks[player].choose()))
            else:
                plan = self._budgeted(world, position, context, ids, draw, designs[row], memories[row])
                plan.predictions, plan.modes, plan.previous = predictions, modes, previous
                if plan.trial:
                    trials.append((row, 0, plan, dials[row], plan.references[0], world.fallbacks[0].choose()))
            world.plans[position] = plan
        # the trials' dial weights (choose_portfolio's rule), a batch per number of design runs and assets
        for _, members in _groups([plan.drafts.shape for _, _, plan, _, _, _ in trials]):
            chosen = [trials[at] for at in members]
            weights = dial_weights(
                np.array([dial.combination for _, _, _, dial, _, _ in chosen]),
                np.array([dial.trust_weight for _, _, _, dial, _, _ in chosen]),
                np.array([q for *_, q in chosen]),
                np.array([reference for _, _, _, _, reference, _ in chosen]),
                np.array([plan.drafts for _, _, plan, _, _, _ in chosen]),
            )
            for (row, player, _, _, _, _), played in zip(chosen, weights, strict=True):
                self.worlds[row].weights[player][position] = played

    def _plan(
        self,
        world: _World,
        context: DateContext,
        ids: tuple[int, ...],
        draw: Draw,
        designed: tuple[int, ...],
        predictions: NDArray[np.float64],
        modes: dict[LearnerMode, NDArray[np.float64]],
        previous: NDArray[np.float64],
    ) -> _Plan:
        """A plan without a budget: the whole design, each variant's reference (a memory-free one drafts mask 0
        beside the design where the design has none) and calls."""
        drafted = np.asarray(draw(designed), dtype=np.float64)
        references = []
        for player, setting in enumerate(self.players):
            if setting.reference is ReferenceSource.MEMORY_FREE:
                extra = 0 not in designed
                reference = np.asarray(draw((0,))[0], dtype=np.float64) if extra else drafted[designed.index(0)]
            else:
                extra, reference = False, np.asarray(context.reference)
            world.calls[player].append(len(designed) + int(extra))
            references.append(reference)
        return _Plan(ids, designed, True, predictions, modes, drafted, previous, references)

    def _budgeted(
        self,
        world: _World,
        position: int,
        context: DateContext,
        ids: tuple[int, ...],
        draw: Draw,
        designed: tuple[int, ...],
        memory: tuple[int | None, float],
    ) -> _Plan:
        """A plan at a draft budget (plan_budget's rule): a trial drafts the design (the memory-free reference
        beside it where it is the reference), any other plan its one or two drafts, played as choose_exploit says."""
        config = self.config
        memory_free = config.reference is ReferenceSource.MEMORY_FREE
        budgeted = plan_budget(
            world.credit,
            config.draft_budget,
            config.draft_horizon,
            designed,
            needs_reference=memory_free and 0 not in designed,
            memory=lambda: memory,
            pairs=memory_free,
            blends=not memory_free,
            fresh=lambda: is_fresh(contribution_counts(world.curator, ids, world.learner.count)),
        )
        world.credit = budgeted.credit
        masks = budgeted.masks
        world.calls[0].append(len(masks))
        drafted = np.asarray(draw(masks), dtype=np.float64)
        reference = drafted[masks.index(0)] if memory_free and 0 in masks else np.asarray(context.reference)
        rows = len(masks) - int(budgeted.extra_reference)
        plan = _Plan(ids, masks[:rows], budgeted.trial, np.zeros(0), {}, drafted[:rows], np.zeros(0), [reference])
        if not budgeted.trial:  # choose_exploit's rule (method 4.11)
            q = world.fallbacks[0].choose()
            world.weights[0][position] = exploit_weights(masks, drafted, q, reference, budgeted.memory_share)
        return plan

    def _frozen(
        self, world: _World, ids: tuple[int, ...], selected: LearnerMode
    ) -> tuple[NDArray[np.float64], dict[LearnerMode, NDArray[np.float64]]]:
        """A plan's frozen predictions (frozen_predictions's rule, with the reset after a detected change):
        the selected mode's and every fitted mode's."""
        modes = {mode: np.array(values, dtype=np.float64) for mode, values in world.learner.predict_modes(ids).items()}
        return self._reset(world, ids, modes, selected)

    @staticmethod
    def _reset(
        world: _World, ids: Sequence[int], modes: dict[LearnerMode, NDArray[np.float64]], selected: LearnerMode
    ) -> tuple[NDArray[np.float64], dict[LearnerMode, NDArray[np.float64]]]:
        """Every mode's predictions with the value of each changed experience learnt since its change (its mean
        since the change shrunk by n / (n + RESET_PRIOR)), and the selected mode's."""
        if world.curator is not None and world.changed:  # the core's reset (Curator.reset_values)
            reset = world.curator.reset_values([e for e in ids if e in world.changed])
            for column, experience in enumerate(ids):
                if experience in reset:
                    for values in modes.values():
                        values[column] = reset[experience]
        key = selected if selected in modes else next(iter(modes))
        return modes[key].copy(), modes

    def _retrieve(
        self, position: int, omega: NDArray[np.float64], selected: Sequence[LearnerMode]
    ) -> list[tuple[tuple[int, ...], Draw, _Frozen]]:
        """Each world's retrieved experiences, the drafts of every mask of them and the plan's frozen
        predictions: its own ranking of the date's candidates where it curates and the world offers them
        (MemTrial.rank), else the world's retrieval."""
        config = self.config
        k = config.k
        curates = config.retrieval is RetrievalMode.VALUE_AWARE or config.quarantine.enabled
        out: list[tuple[tuple[int, ...], Draw, _Frozen]] = []
        ranked: list[int] = []
        for row, world in enumerate(self.worlds):
            context = world.lane.contexts[position]
            if curates and context.draft_for is not None and context.candidate_scores is not None:
                ranked.append(row)
                out.append(((), _rows(np.zeros(0)), (np.zeros(0), {})))
                continue
            if k > len(context.retrieved) and context.wide_drafts is not None:
                ids, drafts = tuple(context.wide_retrieved[:k]), np.asarray(context.wide_drafts)
            else:
                ids, drafts = tuple(context.retrieved), np.asarray(context.drafts)
            if world.quarantined:  # a plan may not name them: the subsets of those left are drafted
                ids, drafts = without_quarantined(ids, drafts, sorted(world.quarantined))
            out.append((ids, _rows(drafts), self._frozen(world, ids, selected[row])))
        if not ranked:
            return out
        trust = omega if config.retrieval is RetrievalMode.VALUE_AWARE else np.zeros(omega.shape)
        # a world at omega = 0 ranks by similarity alone (method 4.12): its values are read for its picks only
        lists = [self._candidates(self.worlds[row], position, selected[row], trust[row] > 0.0) for row in ranked]
        width = max(len(candidates.ids) for candidates in lists)
        shape = (len(ranked), width)
        similarity, means, sds = np.zeros(shape), np.zeros(shape), np.zeros(shape)
        counts, known, valid = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
        for at, candidates in enumerate(lists):
            size = len(candidates.ids)
            similarity[at, :size], means[at, :size], sds[at, :size] = (
                candidates.similarity,
                candidates.means,
                candidates.sds,
            )
            counts[at, :size], known[at, :size], valid[at, :size] = candidates.counts, candidates.known, True
        orders, _ = rank_orders(similarity, means, sds, counts, known, trust[ranked], valid=valid)
        for at, row in enumerate(ranked):
            candidates, world = lists[at], self.worlds[row]
            picked = orders[at, : min(k, len(candidates.ids))]
            ids = tuple(candidates.ids[i] for i in picked.tolist())
            if candidates.modes:
                frozen = self._reset(
                    world, ids, {mode: v[picked] for mode, v in candidates.modes.items()}, selected[row]
                )
            else:
                frozen = self._frozen(world, ids, selected[row])
            context = world.lane.contexts[position]
            assert context.draft_for is not None
            out[row] = (ids, functools.partial(context.draft_for, ids), frozen)
        return out

    def _candidates(self, world: _World, position: int, selected: LearnerMode, values: bool) -> _Candidates:
        """A world's candidates on a date, quarantined ones left out, with what the ranking reads of each
        (MemTrial._posteriors) and each fitted mode's prediction of each (the plan freezes its picks'); without
        ``values`` (a ranking by similarity alone) their similarities only."""
        context = world.lane.contexts[position]
        scores = np.asarray(context.candidate_scores, dtype=np.float64)
        quarantined = world.quarantined
        if quarantined:
            kept = [i for i, e in enumerate(context.candidates) if e not in quarantined]
            ids, similarity = [int(context.candidates[i]) for i in kept], scores[kept]
        else:
            ids, similarity = [int(e) for e in context.candidates], scores
        size = len(ids)
        if not values:
            zeros = np.zeros(size)
            return _Candidates(ids, similarity, zeros, zeros, np.zeros(size, dtype=np.int64), zeros > 0.0, {})
        key = (world.revision, selected, tuple(ids))
        cached = world.read
        if cached is not None and cached[0] == key:  # nothing learnt since: the values of the last read
            return replace(cached[1], similarity=similarity)
        candidates = self._read(world, ids, similarity, selected)
        world.read = (key, candidates)
        return candidates

    def _read(
        self, world: _World, ids: list[int], similarity: NDArray[np.float64], selected: LearnerMode
    ) -> _Candidates:
        size = len(ids)
        learner = world.learner
        if not learner.is_fitted:
            zeros = np.zeros(size)
            modes = {mode: zeros.copy() for mode in learner.predict_modes(())}
            candidates = _Candidates(
                ids, similarity, zeros, zeros.copy(), np.zeros(size, dtype=np.int64), np.zeros(size, dtype=bool), modes
            )
        else:
            fits = learner.fits_
            key = selected if selected in fits else next(iter(fits))
            means, sds = fits[key].posteriors(ids, hyper=True)
            modes = {mode: means.copy() if mode is key else fit.posteriors(ids)[0] for mode, fit in fits.items()}
            statistics = learner.statistics
            rows = np.fromiter((statistics.index.get(e, -1) for e in ids), dtype=np.int64, count=size)
            counts = np.where(rows >= 0, statistics.counts[np.maximum(rows, 0)], 0)
            noise = any(fit.scale > 0.0 for fit in fits.values())
            known = np.full(size, noise)
            candidates = _Candidates(ids, similarity, means, sds if noise else np.zeros(size), counts, known, modes)
        if world.curator is not None and world.changed:  # the values learnt since a change (MemTrial._posteriors)
            since = world.curator.since_changes(e for e in ids if e in world.changed)
            for column, experience in enumerate(ids):
                if experience in since:
                    regime = since[experience]
                    candidates.means[column], candidates.sds[column] = regime.mean, regime.sd or 0.0
                    candidates.counts[column], candidates.known[column] = regime.n, regime.sd is not None
        return candidates

    def _settle(self, position: int) -> None:
        """Every world's settlement of the date at ``position`` (learn()'s rule; a budget's exploiting plan
        learns nothing), the trials a batch per shape of plan."""
        shapes: dict[tuple[tuple[int, ...], int, int], list[tuple[int, _Plan]]] = {}
        for row, world in enumerate(self.worlds):
            plan = world.plans.pop(position)
            if plan.trial:  # a trial without experiences still teaches the fallback (learn()'s rule)
                shapes.setdefault((plan.masks, len(plan.ids), plan.drafts.shape[1]), []).append((row, plan))
        for (masks, size, _), members in shapes.items():
            self._learn(position, masks, size, [row for row, _ in members], [plan for _, plan in members])

    def _learn(self, position: int, masks: tuple[int, ...], size: int, rows: list[int], plans: list[_Plan]) -> None:
        """The trials of one shape settled at once: utilities of the design's drafts and their mean (and of each
        variant's reference where its fallback learns from it); Banzhaf contrasts; the gate's and the modes'
        scores; the learner, fallbacks, noise cost and quarantine book of each world."""
        scoring = self.scoring
        worlds = [self.worlds[row] for row in rows]
        design = len(masks)
        drafts = np.array([plan.drafts for plan in plans])  # (G, runs, n)
        means = drafts.mean(axis=1)
        rel = np.array([world.lane.outcome(position) for world in worlds])
        previous = np.array([plan.previous for plan in plans])
        learning = [
            p for p, s in enumerate(self.players) if s.fallback in (FallbackVariant.FTRL, FallbackVariant.UNIFORM)
        ]
        references = [np.array([plan.references[player] for plan in plans]) for player in learning]
        books = np.concatenate([drafts, means[:, None], *(r[:, None] for r in references)], axis=1)
        scores = utilities_by_date(normalised(books), rel, previous, scoring.gamma, scoring.fee_bp)
        utilities, mean_u = scores[:, :design], scores[:, design]
        at = np.asarray(rows, dtype=np.int64)
        if size:
            self._credit(position, masks, size, at, worlds, plans, utilities)
        for column, (player, reference) in enumerate(zip(learning, references, strict=True)):  # q: ref, ens fixed
            mixtures = mixture_utilities_by_date(reference, means, rel, previous, scoring.gamma, scoring.fee_bp, GRID)
            reference_u = scores[:, design + 1 + column].tolist()
            for world, mixture, utility, mean in zip(worlds, mixtures, reference_u, mean_u.tolist(), strict=True):
                world.fallbacks[player].update(mixture, utility, mean)
        gains = noise_gains(utilities, mean_u)
        if gains is not None:
            self.noise_count[at] += 1
            self.noise_total[at] += gains

    def _credit(
        self,
        position: int,
        masks: tuple[int, ...],
        size: int,
        at: NDArray[np.int64],
        worlds: list[_World],
        plans: list[_Plan],
        utilities: NDArray[np.float64],
    ) -> None:
        """What trials with experiences learn beyond the fallback and the noise cost: Banzhaf contrasts, the
        gate's and the modes' scores, the learner and the quarantine book."""
        design = len(masks)
        checked = validate_masks(list(masks), size)
        included = (np.asarray(checked)[:, None] >> np.arange(size)[None, :]) & 1 > 0
        n_in = included.sum(axis=0)
        contrasts = contributions_by_date(utilities, included, n_in, design - n_in)
        centred = centre_contrasts(contrasts)
        gate_scores = pearson_scores(np.array([plan.predictions for plan in plans]), centred)
        scored = ~np.isnan(gate_scores)
        self.log_growth[at[scored]] = add_scores(self.log_growth[at[scored]], gate_scores[scored], self.bets)
        self.n_scored[at[scored]] += 1
        if self.config.learner is LearnerMode.AUTO:
            for mode in MODES:
                values = pearson_scores(np.array([plan.modes[mode] for plan in plans]), centred)
                for world, value in zip(worlds, values.tolist(), strict=True):
                    if not np.isnan(value):
                        world.learner.record_score(mode, value)
        learnt: list[dict[ExperienceId, float]] = [
            dict(zip(plan.ids, (float(c) for c in row), strict=True))
            for plan, row in zip(plans, contrasts, strict=True)
        ]
        for world, contributions in zip(worlds, learnt, strict=True):
            world.learn(f"d{position}", contributions)
            if world.curator is not None:
                world.observe(world.lane.contexts[position].index, contributions)

    # -- what a member reads ----------------------------------------------------------------------
    def trajectory(self, index: int, player: int, walk: Walk, projected: bool) -> Trajectory:
        self.run()
        return Trajectory(
            walk.held_all(stacked(self.worlds[index].weights[player]), projected),
            np.array(self.opens[index], dtype=bool),
            np.array(self.statistics[index], dtype=np.float64),
            np.array(self.omegas[index], dtype=np.float64),
        )


def _groups(keys: Sequence[Any]) -> list[tuple[Any, list[int]]]:
    """Positions of ``keys`` grouped by equal key, in the order each key first appears."""
    groups: dict[Any, list[int]] = {}
    for row, key in enumerate(keys):
        groups.setdefault(key, []).append(row)
    return list(groups.items())


class CohortMember(Method):
    """One variant in one world of a :class:`Cohort`, seen by the runner as a method of its own."""

    uses_gate = True

    def __init__(self, scoring: Scoring, method_id: str, cohort: Cohort, index: int, player: int = 0) -> None:
        super().__init__(scoring)
        self.id, self._cohort, self._index, self._player = method_id, cohort, index, player

    @property
    def _world(self) -> _World:
        self._cohort.run()
        return self._cohort.worlds[self._index]

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        raise TypeError(f"{self.id} is served a whole walk at once: ask for its trajectory")

    def trajectory(self, walk: Walk, projected: bool = True) -> Trajectory:
        return self._cohort.trajectory(self._index, self._player, walk, projected)

    def values(self) -> dict[int, float]:
        self._cohort.run()
        return dict(self._cohort.values[self._index])

    def draft_calls(self, reference_calls: int) -> float | None:
        """Mean draft calls per decision its plans made (the world's reference counts when it is used)."""
        calls = self._world.calls[self._player]
        if not calls:
            return None
        memory_free = self._cohort.players[self._player].reference is ReferenceSource.MEMORY_FREE
        return float(np.mean(calls)) + (0 if memory_free else reference_calls)

    @property
    def quarantining(self) -> bool:
        return self._cohort.config.quarantine.enabled

    @property
    def retrievals(self) -> list[tuple[int, ...]]:
        return self._world.retrievals

    @property
    def quarantines(self) -> list[tuple[int, int]]:
        return self._world.quarantines
