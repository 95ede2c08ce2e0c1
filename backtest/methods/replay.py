"""Every MemTrial variant of a world from trajectories computed once (the batch way to run the method).

Within one world, what the method learns does not depend on which draft a
variant chose: settlement scores *every* designed draft against the same
outcome, so the contributions, the value model, the mode scores, the trust
gates' score statistics and the fallback's sums follow one trajectory per
design, whatever each variant did (settlement is in maturity order). A
:class:`MemTrialFamily` replays a world's whole calendar of decisions and
settlements once and serves each variant (gate test and level, learner mode,
fallback, design) by selecting from arrays:

1. one pass over the calendar settles every date once per design: utilities of
   the designed drafts, the reference, the draft mean and the 201 mixtures;
   Banzhaf contrasts; running learner statistics, snapshotted at every plan;
2. the value model is fitted at every plan of every design at once
   (:func:`~memtrial.values.fayherriot.fit_many`, a call per learner mode and feature version); designs
   of one calendar share counts and features, hence eigendecompositions, and
   so do the worlds of one calendar under other investors (:data:`SPECTRA`);
3. the mode scores, the automatic mode choice and each learner setting's gate
   scores follow in settlement order; the gates' running statistics are
   cumulative sums of those scores, the fallback's of the mixture utilities;
4. each variant's trust decision (:func:`~memtrial.trust.gate.trust_decision`'s
   rule), fallback weight and action (:func:`~memtrial.action.rule.choose`'s rule)
   is read off those arrays for every date at once.

Every number is produced by the same arithmetic as the online
:class:`~memtrial.engine.lifecycle.MemTrial` (the core's functions are written so that a
batch gives each item exactly the result it gets alone), so each variant's
decisions, gate states and values are identical to an engine's with the same
configuration: ``tests/backtest/test_replay.py`` checks it on every regime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from backtest.methods.base import Event, Method, Outcome, Scoring, Trajectory, Walk, calendar, stacked
from memtrial.action.fallback import GRID, FallbackVariant, choices_after, running_sums
from memtrial.action.rule import (
    ActionRule,
    best_subsets,
    dial_combination,
    dial_gains,
    dial_weights,
    gated_weights,
    noise_costs,
    noise_gains,
    subset_values,
)
from memtrial.credit.banzhaf import centre_contrasts, contributions_by_date
from memtrial.credit.design import DesignKind, plan_masks, validate_masks
from memtrial.curation import RetrievalMode
from memtrial.engine.config import ReferenceSource
from memtrial.engine.lifecycle import EngineConfig
from memtrial.numeric.running import running_counts
from memtrial.outcomes.mandates import mixture_utilities_by_date, normalised, utilities_by_date
from memtrial.trust.gate import gate_series, gate_states, pearson_scores
from memtrial.values import (
    MIN_AUTO_SCORES,
    CreditBasis,
    LearnerMode,
    OutlierGuard,
    RunningStatistics,
    SufficientStatistics,
    ValueFit,
    auto_prefers_content,
    content_features,
    degenerate_fit,
)
from memtrial.values.fayherriot import FayHerriotFit, SpectraCache, fit_many, stack_problems

__all__ = ["SPECTRA", "FamilyMember", "MemTrialFamily", "calendar", "families", "family_of", "replays"]

FINAL = -1  # the snapshot key of a learner after the last settlement
# the learners' eigendecompositions, shared by the worlds of one calendar that a process replays
SPECTRA = SpectraCache()


@dataclass(slots=True)
class _Snapshot:
    """A design's learner as one plan saw it."""

    stats: SufficientStatistics | None
    index: dict[object, int]
    features_version: int


@dataclass(slots=True)
class _Design:
    """One learner trajectory: a design, what the learner learns from (centred or raw credit) and whether it
    screens outliers (``robust``: an :class:`~memtrial.values.OutlierGuard` on its statistics)."""

    kind: DesignKind
    credit: CreditBasis
    robust: bool = False
    masks: list[tuple[int, ...]] = field(default_factory=list)  # per position
    snapshots: dict[int, _Snapshot] = field(default_factory=dict)  # per decided position
    contrasts: dict[int, NDArray[np.float64]] = field(default_factory=dict)  # per position with experiences
    centred: dict[int, NDArray[np.float64]] = field(default_factory=dict)
    mixture: dict[int, tuple[NDArray[np.float64], float, float]] = field(default_factory=dict)
    predictions: dict[LearnerMode, NDArray[np.float64]] = field(default_factory=dict)  # (positions, k)
    final: dict[LearnerMode, ValueFit] = field(default_factory=dict)
    realised: NDArray[np.float64] = field(
        default_factory=lambda: np.zeros((0, 0))
    )  # (positions, k) centred contributions
    counts: dict[LearnerMode, NDArray[np.int64]] = field(
        default_factory=dict
    )  # mode scores before each settlement step
    totals: dict[LearnerMode, NDArray[np.float64]] = field(default_factory=dict)
    cache: dict[object, tuple[NDArray[np.float64], NDArray[np.float64]]] = field(default_factory=dict)
    noise: dict[int, float | None] = field(default_factory=dict)  # per position: its estimate of kappa


def _assemble(
    n_dates: int, parts: Sequence[tuple[NDArray[np.int64], NDArray[np.float64]]]
) -> Sequence[NDArray[np.float64]]:
    """Each date's weights from batches (the dates of a batch, their weights): one (dates, n) array
    when a single batch holds every date, else a list."""
    if len(parts) == 1 and parts[0][0].size == n_dates:
        rows, chosen = parts[0]
        out = np.empty_like(chosen)
        out[rows] = chosen
        return out  # type: ignore[return-value]  # an array of rows is a sequence of rows
    weights: list[NDArray[np.float64]] = [np.zeros(0)] * n_dates
    for rows, chosen in parts:
        for row, position in enumerate(rows.tolist()):
            weights[position] = chosen[row]
    return weights


def _posterior_means(fit: ValueFit, ids: Sequence[int]) -> list[float]:
    """``[fit.posterior(e).mean for e in ids]``, read off the fit at once (:meth:`ValueFit.posteriors`)."""
    return fit.posteriors(ids)[0].tolist()  # type: ignore[no-any-return]


def _key(config: EngineConfig) -> tuple[DesignKind, CreditBasis, bool]:
    """The learner trajectory a variant follows: its design, credit and outlier screen."""
    return config.design, config.credit, config.robust


class MemTrialFamily:
    """The MemTrial variants ``configs`` (method id -> configuration) of one world, replayed in one go.

    contexts: the presented dates in order; outcome(position): the realised
    relative prices of a date (read only when that date settles); settled: per
    design kind, the design of another family on the same dates and outcomes whose
    utilities, contrasts and mixtures this family reads instead of computing them again.
    """

    def __init__(
        self,
        configs: Mapping[str, EngineConfig],
        features: NDArray[np.float64],
        n_components: int | None,
        contexts: Sequence[DateContext],
        outcome: Callable[[int], NDArray[np.float64]],
        settled: dict[DesignKind, _Design] | None = None,
    ) -> None:
        self.configs = dict(configs)
        # per design kind, the design that settles its dates (shared by families that see the same dates)
        self._settled = {} if settled is None else settled
        first = next(iter(self.configs.values()))
        for method_id, config in self.configs.items():
            if (config.k, config.gamma, config.fee_bp, config.n_components) != (
                first.k,
                first.gamma,
                first.fee_bp,
                first.n_components,
            ):
                raise ValueError(f"variant {method_id!r} differs from the family in k, gamma, fee or components")
        self.k, self.gamma, self.fee_bp, self.n_components = first.k, float(first.gamma), first.fee_bp, n_components  # type: ignore[arg-type]
        self.contexts = list(contexts)
        self._batches: dict[
            tuple[tuple[int, ...], tuple[int, ...]], tuple[NDArray[np.float64], NDArray[np.float64]]
        ] = {}
        self.position = {context.index: position for position, context in enumerate(self.contexts)}
        self.designs = {
            _key(config): _Design(config.design, config.credit, config.robust) for config in self.configs.values()
        }
        self.features: dict[int, NDArray[np.float64]] = {
            e: np.asarray(z, dtype=np.float64) for e, z in enumerate(features)
        }
        self.versions: list[dict[int, NDArray[np.float64]]] = [dict(self.features)]  # the features after each addition
        self.ids = [tuple(int(e) for e in context.retrieved) for context in self.contexts]
        self._ids: tuple[NDArray[np.int64], NDArray[np.bool_]] | None = None  # see _id_matrix
        self._groups: tuple[tuple[int, ...], list[tuple[int, NDArray[np.int64]]]] | None = None  # see _by_size
        for design in self.designs.values():
            by_size: dict[int, tuple[int, ...]] = {}
            design.masks = [
                by_size.get(len(ids)) or by_size.setdefault(len(ids), tuple(plan_masks(design.kind, self.k, len(ids))))
                for ids in self.ids
            ]
        events = calendar(self.contexts)
        self._settle_all(events, outcome)
        self._fit_all()
        self.served = self._serve(events)

    # -- 1. settle every date once, snapshot the learners at every plan ---------------------
    def _settle_all(self, events: Sequence[Event], outcome: Callable[[int], NDArray[np.float64]]) -> None:
        self._outcomes(outcome)
        running = {
            key: RunningStatistics(design.credit is CreditBasis.CENTRED, OutlierGuard() if design.robust else None)
            for key, design in self.designs.items()
        }
        last: dict[
            object, _Snapshot
        ] = {}  # per design: its latest snapshot, shared by plans with nothing learnt between
        for kind, position in events:
            if kind == "decide":
                added = self.contexts[position].added
                for experience, embedding in added:
                    self.features[int(experience)] = np.asarray(embedding, dtype=np.float64)
                if added:
                    self.versions.append(dict(self.features))
                for design_kind, design in self.designs.items():
                    seen = last.get(design_kind)
                    if seen is None:
                        seen = last[design_kind] = _Snapshot(
                            running[design_kind].snapshot(), dict(running[design_kind].index), len(self.versions) - 1
                        )
                    elif seen.features_version != len(self.versions) - 1:  # the same statistics, new features
                        seen = _Snapshot(seen.stats, seen.index, len(self.versions) - 1)
                    design.snapshots[position] = seen
                continue
            ids = self.ids[position]
            if ids:
                last.clear()
                for design_kind, design in self.designs.items():
                    running[design_kind].add_date(
                        dict(zip(ids, (float(c) for c in design.contrasts[position]), strict=True))
                    )
        for design_kind, design in self.designs.items():  # the learner after the last settlement
            design.snapshots[FINAL] = _Snapshot(
                running[design_kind].snapshot(), dict(running[design_kind].index), len(self.versions) - 1
            )

    def _outcomes(self, outcome: Callable[[int], NDArray[np.float64]]) -> None:
        """Utilities, contrasts and mixture utilities of every date, a batch per shape of date."""
        groups: dict[tuple[int, int], list[int]] = {}
        for position, context in enumerate(self.contexts):
            groups.setdefault((len(self.ids[position]), context.reference.shape[0]), []).append(position)
        for (size, _), positions in groups.items():
            contexts = [self.contexts[p] for p in positions]
            rel = np.array([outcome(p) for p in positions])
            reference = np.array([c.reference for c in contexts])
            previous = np.array([c.previous for c in contexts])
            done = self._settled
            for design in self.designs.values():
                first = done.setdefault(design.kind, design)
                if first is not design:  # a design of the same kind (other credit) settles to the same numbers
                    for position in positions:
                        design.mixture[position], design.noise[position] = (
                            first.mixture[position],
                            first.noise[position],
                        )
                        if size:
                            design.contrasts[position], design.centred[position] = (
                                first.contrasts[position],
                                first.centred[position],
                            )
                    continue
                masks = list(design.masks[positions[0]])
                drafts = np.array([c.drafts[masks] for c in contexts])  # (G, runs, n)
                means = drafts.mean(axis=1)
                rows = np.concatenate([drafts, reference[:, None, :], means[:, None, :]], axis=1)
                rows = normalised(rows)
                scores = utilities_by_date(rows, rel, previous, self.gamma, self.fee_bp)
                mixtures = mixture_utilities_by_date(reference, means, rel, previous, self.gamma, self.fee_bp, GRID)
                runs = len(masks)
                gains = noise_gains(scores[:, :runs], scores[:, runs + 1])
                for row, position in enumerate(positions):
                    design.mixture[position] = (mixtures[row], float(scores[row, runs]), float(scores[row, runs + 1]))
                    design.noise[position] = None if gains is None else float(gains[row])
                if size:
                    checked = validate_masks(masks, size)
                    included = (np.asarray(checked)[:, None] >> np.arange(size)[None, :]) & 1 > 0
                    n_in = included.sum(axis=0)
                    contrasts = contributions_by_date(scores[:, :runs], included, n_in, runs - n_in)
                    centred = centre_contrasts(contrasts)
                    for row, position in enumerate(positions):
                        design.contrasts[position] = contrasts[row]
                        design.centred[position] = centred[row]

    # -- 2. fit the value model at every plan, a batch per learner state ---------------------
    def _content(self, version: int) -> dict[object, NDArray[np.float64]]:
        available = self.versions[version]
        ids = tuple(available)
        if not ids:
            return {}
        matrix = np.array([available[i] for i in ids])
        return dict(zip(ids, content_features(matrix, self.n_components), strict=True))

    def _fit_all(self) -> None:
        """Every design's learner at every plan, per mode: one :func:`fit_many` call per feature
        version, all designs and sizes together (problems that share counts and features, as the
        designs of one calendar do, share their eigendecompositions)."""
        contents: dict[int, dict[object, NDArray[np.float64]]] = {}
        for mode in (LearnerMode.IDENTITY, LearnerMode.CONTENT):
            problems: dict[int, list[tuple[_Design, int]]] = {}
            for design in self.designs.values():
                predictions = design.predictions[mode] = np.full((len(self.contexts), self.k), np.nan)
                for position, snapshot in design.snapshots.items():
                    if snapshot.stats is None:
                        if position != FINAL:
                            predictions[position, : len(self.ids[position])] = 0.0  # not fitted: the prior mean
                        continue
                    problems.setdefault(snapshot.features_version if mode is LearnerMode.CONTENT else -1, []).append(
                        (design, position)
                    )
            for version, members in problems.items():
                vectors = contents.setdefault(version, self._content(version)) if mode is LearnerMode.CONTENT else {}
                self._fit_version(mode, vectors, members)

    def _fit_version(
        self, mode: LearnerMode, vectors: dict[object, NDArray[np.float64]], members: list[tuple[_Design, int]]
    ) -> None:
        dim = next((v.shape[0] for v in vectors.values()), 0)
        masters: dict[int, NDArray[np.float64]] = {}  # per design: features of its learner's experiences, in order
        for design, _ in members:
            if id(design) not in masters:
                ids = design.snapshots[FINAL].stats.experience_ids  # type: ignore[union-attr]
                masters[id(design)] = np.array([vectors.get(i, np.zeros(dim)) for i in ids], dtype=np.float64).reshape(
                    len(ids), dim
                )
        live = [(design, position) for design, position in members if design.snapshots[position].stats.scale > 0.0]  # type: ignore[union-attr]
        fitted: dict[tuple[int, int], FayHerriotFit] = {}
        if live:
            # one problem per distinct snapshot (plans with nothing learnt between them share theirs)
            problems: dict[int, int] = {}
            for design, position in live:
                problems.setdefault(id(design.snapshots[position].stats), len(problems))
            unique = {problems[id(d.snapshots[p].stats)]: (d, p) for d, p in reversed(live)}
            first = [unique[row] for row in range(len(problems))]
            stacked_problems = []
            for design, position in first:
                stats = design.snapshots[position].stats
                assert stats is not None
                size = len(stats.experience_ids)
                stacked_problems.append(
                    (stats.means / stats.scale, stats.counts.astype(np.float64), masters[id(design)][:size])
                )
            m, n, z, sizes = stack_problems(stacked_problems, dim)
            batch = fit_many(m, n, z, sizes=sizes, cache=SPECTRA)
            read = self._read_off(mode, live, problems, sizes, batch.mean)
            for design, position in live:
                if (id(design), position) not in read:
                    row = problems[id(design.snapshots[position].stats)]
                    fitted[(id(design), position)] = batch.fit(row, int(sizes[row]))
        done = {(id(design), position) for design, position in live} - set(fitted)
        for design, position in members:
            if (id(design), position) in done:
                continue
            snapshot = design.snapshots[position]
            stats = snapshot.stats
            assert stats is not None
            size = len(stats.experience_ids)
            model = fitted.get((id(design), position)) or degenerate_fit(size, dim)
            value_fit = ValueFit(snapshot.index, stats.counts, stats.scale, model, vectors)
            if position == FINAL:
                design.final[mode] = value_fit
            else:
                design.predictions[mode][position, : len(self.ids[position])] = _posterior_means(
                    value_fit, self.ids[position]
                )

    def _id_matrix(self) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        """Each position's retrieved experience ids, (positions, k), and where a row has none (padding)."""
        if self._ids is None:
            matrix = np.full((len(self.ids), self.k), -1, dtype=np.int64)
            for position, ids in enumerate(self.ids):
                matrix[position, : len(ids)] = ids
            self._ids = matrix, matrix < 0
        return self._ids

    def _read_off(
        self,
        mode: LearnerMode,
        live: list[tuple[_Design, int]],
        problems: dict[int, int],
        sizes: NDArray[np.int64],
        means: NDArray[np.float64],
    ) -> set[tuple[int, int]]:
        """The plans whose retrieved experiences the learner has all learnt: their predictions read off the
        batch's posterior means (``means``, (problems, H), in units of the scale), every plan of a design at
        once, each value ``mean * scale`` as for the plan alone. Returns those plans, (id(design), position)."""
        matrix, padding = self._id_matrix()
        by_design: dict[int, tuple[_Design, list[int]]] = {}
        for design, position in live:
            if position != FINAL:
                by_design.setdefault(id(design), (design, []))[1].append(position)
        read: set[tuple[int, int]] = set()
        for design, positions in by_design.values():
            index = design.snapshots[FINAL].index
            experiences = np.fromiter(index.keys(), dtype=np.int64, count=len(index))  # experience ids, in learner rows
            table = np.full(max(int(matrix.max()), int(experiences.max(initial=0))) + 1, np.iinfo(np.int64).max)
            table[experiences] = np.fromiter(index.values(), dtype=np.int64, count=len(index))
            snapshots = [design.snapshots[position].stats for position in positions]
            rows = np.array([problems[id(stats)] for stats in snapshots], dtype=np.int64)
            scales = np.array([stats.scale for stats in snapshots], dtype=np.float64)  # type: ignore[union-attr]
            at = np.asarray(positions, dtype=np.int64)
            pad = padding[at]
            columns = np.where(pad, 0, table[np.where(pad, 0, matrix[at])])
            learnt = ((columns < sizes[rows][:, None]) | pad).all(axis=1) & ~pad.all(axis=1)
            if not learnt.any():
                continue
            at, pad, columns = at[learnt], pad[learnt], columns[learnt]
            values = means[rows[learnt][:, None], columns] * scales[learnt][:, None]
            predictions = design.predictions[mode]
            predictions[at] = np.where(pad, predictions[at], values)
            read.update((id(design), position) for position in at.tolist())
        return read

    # -- 3 and 4. scores, gates, fallbacks and actions for every date --------------------------
    def _serve(self, events: Sequence[Event]) -> dict[str, tuple[NDArray[np.float64], ...]]:
        n_dates = len(self.contexts)
        settled_before = np.zeros(n_dates, dtype=np.int64)  # per position: how many settlements preceded its plan
        order: list[int] = []  # settled positions that learn, in settlement order
        for kind, position in events:
            if kind == "settle":
                order.append(position)
            else:
                settled_before[position] = len(order)
        served: dict[str, tuple[NDArray[np.float64], ...]] = {}
        for key, design in self.designs.items():
            registered = self._registered(design, order, settled_before)
            variants = {m: c for m, c in self.configs.items() if _key(c) == key}
            scores = {
                setting: self._scores(design, registered[setting], order)
                for setting in {c.learner for c in variants.values()}
            }
            shared: dict[object, dict[object, object]] = {setting: {} for setting in scores}
            for method_id, config in variants.items():
                trust_open, statistic, omega = self._trust(
                    config, scores[config.learner], settled_before, shared[config.learner]
                )
                q = self._fallback(design, config.fallback, order, settled_before)
                if config.action is ActionRule.DIAL:
                    weights, acted = self._dial(design, registered[config.learner], omega, q, order, settled_before)
                else:
                    weights, acted = self._act(design, registered[config.learner], trust_open, q)
                    omega = np.full(n_dates, np.nan)
                served[method_id] = (weights, trust_open, statistic, acted, registered[config.learner], omega)  # type: ignore[assignment]
        return served

    def _registered(
        self, design: _Design, order: Sequence[int], settled_before: NDArray[np.int64]
    ) -> dict[LearnerMode, NDArray[np.float64]]:
        """Predictions each learner setting registered at each plan (auto: the mode chosen then)."""
        identity, content = design.predictions[LearnerMode.IDENTITY], design.predictions[LearnerMode.CONTENT]
        realised = np.full((len(self.contexts), self.k), np.nan)
        for position, centred in design.centred.items():
            realised[position, : len(centred)] = centred
        scored = list(design.centred)
        mode_scores = {
            mode: self._pearson(predictions, realised, scored)
            for mode, predictions in ((LearnerMode.IDENTITY, identity), (LearnerMode.CONTENT, content))
        }
        # the running mode scores in settlement order, and the automatic choice at each plan
        counts, totals = {}, {}
        steps = np.asarray(order, dtype=np.int64)
        for mode, values in mode_scores.items():
            in_order = values[steps] if order else np.zeros(0)
            counts[mode], totals[mode] = running_counts(in_order, ~np.isnan(in_order))
        modes = (LearnerMode.IDENTITY, LearnerMode.CONTENT)
        prefers = auto_prefers_content(
            np.stack([counts[m][settled_before] for m in modes], axis=-1),
            np.stack([totals[m][settled_before] for m in modes], axis=-1),
            MIN_AUTO_SCORES,
        )
        automatic = np.where(prefers[:, None], content, identity)
        design.realised, design.counts, design.totals = realised, counts, totals
        return {LearnerMode.IDENTITY: identity, LearnerMode.CONTENT: content, LearnerMode.AUTO: automatic}

    def _scores(self, design: _Design, registered: NDArray[np.float64], order: Sequence[int]) -> NDArray[np.float64]:
        """The gate score of each settlement, in settlement order (NaN: skipped)."""
        by_position = self._pearson(registered, design.realised, list(design.centred))
        return by_position[np.asarray(order, dtype=np.int64)] if order else np.zeros(0)

    def _pearson(
        self, predicted: NDArray[np.float64], realised: NDArray[np.float64], positions: Sequence[int]
    ) -> NDArray[np.float64]:
        """Per position, the Pearson score of a plan's predictions against its realised centred
        contributions (NaN where skipped or not scored), computed a batch per number of experiences."""
        out = np.full(len(self.contexts), np.nan)
        for size, rows in self._by_size(positions):
            out[rows] = pearson_scores(predicted[rows, :size], realised[rows, :size])
        return out

    def _by_size(self, positions: Sequence[int]) -> list[tuple[int, NDArray[np.int64]]]:
        """``positions`` in groups of one number of experiences, each group's positions in order (the
        grouping of the last ``positions`` asked for is kept: a design's scored positions are asked for
        once per learner mode and setting)."""
        key = tuple(positions)
        if self._groups is None or self._groups[0] != key:
            groups: dict[int, list[int]] = {}
            for position in positions:
                groups.setdefault(len(self.ids[position]), []).append(position)
            self._groups = key, [(size, np.asarray(members, dtype=np.int64)) for size, members in groups.items()]
        return self._groups[1]

    def _trust(
        self,
        config: EngineConfig,
        scores: NDArray[np.float64],
        settled_before: NDArray[np.int64],
        shared: dict[object, object] | None = None,
    ) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]]:
        """Each plan's gate state (open, statistic) under ``config``'s test, and its trust weight omega
        (:func:`~memtrial.trust.gate.gate_states` over every plan at once).

        ``shared`` keeps the statistics of these scores for the next variant that scores the same way
        (they depend on the scores and the bets only, not on alpha)."""
        shared = {} if shared is None else shared
        series = shared.get(config.gate.bets)
        if series is None:  # computed once for every test and level that scores this way
            series = shared[config.gate.bets] = gate_series(scores, settled_before, config.gate.bets)
        return gate_states(config.gate, series)  # type: ignore[arg-type]

    def _fallback(
        self, design: _Design, variant: FallbackVariant, order: Sequence[int], settled_before: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        """Each plan's mixture weight q on the reference (the rule of AnchoredMixture.choose, every date at once)."""
        if "sums" not in design.cache:
            mixtures = np.array([design.mixture[p][0] for p in order]).reshape(len(order), GRID.size)
            design.cache["sums"] = running_sums(
                mixtures,
                np.array([design.mixture[p][1] for p in order]),
                np.array([design.mixture[p][2] for p in order]),
            )
        gains, spread = design.cache["sums"]
        return choices_after(gains, spread, settled_before, variant)

    def _books(self, masks: tuple[int, ...], positions: list[int]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The designed drafts (dates, runs, n) and references (dates, n) of a batch of dates, built once."""
        key = (masks, tuple(positions))
        if key not in self._batches:
            self._batches[key] = (
                np.array([self.contexts[p].drafts[list(masks)] for p in positions]),
                np.array([self.contexts[p].reference for p in positions]),
            )
        return self._batches[key]

    def _shapes(self, design: _Design) -> list[tuple[tuple[int, ...], list[int]]]:
        """The dates in groups of one shape (design masks and number of assets), each a batch (computed once
        per design)."""
        if "shapes" not in design.cache:
            groups: dict[tuple[tuple[int, ...], int], list[int]] = {}
            for position, context in enumerate(self.contexts):
                groups.setdefault((design.masks[position], context.reference.shape[0]), []).append(position)
            design.cache["shapes"] = [(masks, positions) for (masks, _), positions in groups.items()]  # type: ignore[assignment]
        return design.cache["shapes"]  # type: ignore[return-value]

    def _act(
        self, design: _Design, predictions: NDArray[np.float64], trust_open: NDArray[np.bool_], q: NDArray[np.float64]
    ) -> tuple[Sequence[NDArray[np.float64]], NDArray[np.bool_]]:
        """Each date's weights and whether it acted on a designed draft (:func:`~memtrial.action.rule.gated_weights`,
        a batch of dates of one shape at once)."""
        parts: list[tuple[NDArray[np.int64], NDArray[np.float64]]] = []
        acted = np.zeros(len(self.contexts), dtype=bool)
        for masks, positions in self._shapes(design):
            rows = np.asarray(positions, dtype=np.int64)
            size = len(self.ids[positions[0]])
            best, gain = best_subsets(subset_values(predictions[rows, :size], masks), masks)
            drafts, reference = self._books(masks, positions)
            chosen, acted[rows] = gated_weights(trust_open[rows], gain, best, q[rows], reference, drafts)
            parts.append((rows, chosen))
        return _assemble(len(self.contexts), parts), acted

    def _dial(
        self,
        design: _Design,
        predictions: NDArray[np.float64],
        omega: NDArray[np.float64],
        q: NDArray[np.float64],
        order: Sequence[int],
        settled_before: NDArray[np.int64],
    ) -> tuple[Sequence[NDArray[np.float64]], NDArray[np.bool_]]:
        """Each date's weights under the trust dial (the rule of the engine's dial, a batch of dates of one shape at once)."""
        kappa = noise_costs([design.noise.get(p) for p in order], settled_before)
        parts: list[tuple[NDArray[np.int64], NDArray[np.float64]]] = []
        acted = omega > 0.0
        for masks, positions in self._shapes(design):
            rows = np.asarray(positions, dtype=np.int64)
            size = len(self.ids[positions[0]])
            gains = dial_gains(predictions[rows, :size], masks)
            pi = dial_combination(gains, kappa[rows], masks)
            drafts, reference = self._books(masks, positions)
            parts.append((rows, dial_weights(pi, omega[rows], q[rows], reference, drafts)))
        return _assemble(len(self.contexts), parts), acted

    # -- what the runner reads ----------------------------------------------------------------
    def weights(self, method_id: str, index: int) -> tuple[NDArray[np.float64], bool, float | None, float | None]:
        """A variant's weights on a date, whether its gate was open, the gate's statistic (None: none yet)
        and the trust weight (None: the variant acts by the gate)."""
        weights, trust_open, statistic, _, _, omega = self.served[method_id]
        position = self.position[index]
        value = float(statistic[position])
        weight = float(omega[position])
        return (
            weights[position],
            bool(trust_open[position]),
            None if np.isnan(value) else value,
            None if np.isnan(weight) else weight,
        )

    def values(self, method_id: str) -> dict[int, float]:
        """A variant's posterior mean value of every experience after the last settlement."""
        config = self.configs[method_id]
        design = self.designs[_key(config)]
        mode = config.learner
        if mode is LearnerMode.AUTO:
            modes = (LearnerMode.IDENTITY, LearnerMode.CONTENT)
            counts = np.array([design.counts[m][-1] for m in modes])
            totals = np.array([design.totals[m][-1] for m in modes])
            mode = (
                LearnerMode.CONTENT
                if bool(auto_prefers_content(counts, totals, MIN_AUTO_SCORES))
                else LearnerMode.IDENTITY
            )
        fit = design.final.get(mode)
        ids = list(self.versions[-1])
        return dict(zip(ids, [0.0] * len(ids) if fit is None else _posterior_means(fit, ids), strict=True))


class FamilyMember(Method):
    """One variant of a :class:`MemTrialFamily`, seen by the runner as a method of its own."""

    uses_gate = True

    def __init__(self, scoring: Scoring, method_id: str, family: Callable[[], MemTrialFamily]) -> None:
        super().__init__(scoring)
        self.id, self._family = method_id, family

    def family(self) -> MemTrialFamily:
        """The family that serves this variant (built when first asked)."""
        return self._family()

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        weights, self.last_open, self.last_statistic, self.last_trust_weight = self._family().weights(
            self.id, context.index
        )
        return weights

    def trajectory(self, walk: Walk, projected: bool = True) -> Trajectory:
        """Every date read off the family's arrays (the family settled every date when it was built)."""
        family = self._family()
        weights, trust_open, statistic, _, _, omega = family.served[self.id]
        rows = np.array([family.position[context.index] for context in walk.contexts])
        in_order = weights[rows] if isinstance(weights, np.ndarray) else stacked([weights[row] for row in rows])
        return Trajectory(walk.held_all(in_order, projected), trust_open[rows], statistic[rows], omega[rows])

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        """Nothing to do: the family settled every date, in maturity order, when it was built."""

    def values(self) -> dict[int, float]:
        return self._family().values(self.id)


def replays(config: EngineConfig) -> bool:
    """Whether the batch replay serves a configuration: every plan drafts the whole design (no draft budget) on
    the world's own retrieval (similarity, no quarantine), the learner screening outliers or not. A variant
    whose plans follow its own state (a budget's trials, value-aware retrieval, a quarantine book: method
    4.11-4.14) is walked by a cohort (:mod:`backtest.methods.cohort`) or its online engine."""
    return (
        config.retrieval is RetrievalMode.SIMILARITY and not config.quarantine.enabled and config.draft_budget is None
    )


def family_contexts(contexts: Sequence[DateContext], config: EngineConfig) -> list[DateContext]:
    """The dates as a variant's engine sees them (:meth:`~backtest.methods.memtrial_methods.MemTrialMethod.decide`):
    the wider retrieval and its drafts where the design screens more experiences than the date retrieved, and
    each date's memory-free draft as the reference where that is the variant's reference (the draft is made
    whatever the design, so the replay reads it off the context)."""
    seen = []
    for context in contexts:
        if config.k > len(context.retrieved) and context.wide_drafts is not None:
            context = replace(
                context, retrieved=context.wide_retrieved[: config.k], drafts=np.asarray(context.wide_drafts)
            )
        if config.reference is ReferenceSource.MEMORY_FREE:
            context = replace(context, reference=np.asarray(context.drafts[0]))
        seen.append(context)
    return seen


def families(
    scoring: Scoring,
    configs: Mapping[str, EngineConfig],
    features: NDArray[np.float64],
    n_components: int | None,
    contexts: Sequence[DateContext],
    outcome: Callable[[int], NDArray[np.float64]],
) -> list[FamilyMember]:
    """The members of the families the replayed variants ``configs`` form, in the order of ``configs``: one
    family per reference (the world's, or each date's memory-free draft). Each family sees the dates as its
    variants' engines do (:func:`family_contexts`)."""
    groups: dict[ReferenceSource, dict[str, EngineConfig]] = {}
    for method_id, config in configs.items():
        if not replays(config):
            raise ValueError(f"variant {method_id!r} is not replayed: run its online engine")
        groups.setdefault(config.reference, {})[method_id] = config
    members: dict[str, FamilyMember] = {}
    views: dict[tuple[int, ReferenceSource], tuple[list[DateContext], dict[DesignKind, _Design]]] = {}
    for group in groups.values():
        config = next(iter(group.values()))
        # families that see the same dates share them, and the settlement of each design kind
        seen, settled = views.get((config.k, config.reference)) or views.setdefault(
            (config.k, config.reference), (family_contexts(contexts, config), {})
        )
        members.update({m.id: m for m in family_of(scoring, group, features, n_components, seen, outcome, settled)})
    return [members[method_id] for method_id in configs]


def family_of(
    scoring: Scoring,
    configs: Mapping[str, EngineConfig],
    features: NDArray[np.float64],
    n_components: int | None,
    contexts: Sequence[DateContext],
    outcome: Callable[[int], NDArray[np.float64]],
    settled: dict[DesignKind, _Design] | None = None,
) -> list[FamilyMember]:
    """The members of one family (built when first asked), in the order of ``configs``; ``settled``: the
    designs another family on the same ``contexts`` settled (:class:`MemTrialFamily`)."""
    built: list[MemTrialFamily] = []

    def family() -> MemTrialFamily:
        if not built:
            built.append(MemTrialFamily(configs, features, n_components, contexts, outcome, settled))
        return built[0]

    return [FamilyMember(scoring, method_id, family) for method_id in configs]
