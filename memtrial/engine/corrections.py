"""Corrections (method 4.10): an engine's running state recomputed from its history with one outcome replaced.

Plans and scores are taken in the order the log recorded them (a plan's
predictions depend on the scores before it): each plan's predictions are
derived again from what the learner would then have known, and each score
is learnt again, the corrected one with its new outcome through
:func:`memtrial.engine.learning.learn`, the others from their stored contributions
(no utilities, values or log entries are computed for them). The replay runs
in batch, in three passes: the learner's statistics along the log (no
prediction changes them), taken at every plan; the value model at all those
plans in one :func:`~memtrial.values.batchfit.predictions_at` batch, and every
mode's Pearson score of every plan in one vectorised call; then, in log
order, the mode choice, the mode scores and the gate's scores. Each number is
the one a plan-by-plan replay gives (the batch fits each problem as the
learner fits it alone). The replay starts at the last checkpoint before the
corrected score (:mod:`memtrial.engine.checkpoints`), or at the first entry when
there is none, and writes the newest of the checkpoints that fall due as it
passes (the ones after the corrected score are stale). The fallback's sums and the noise cost depend on outcomes alone: the
old outcome is taken out of them and the new one put in. A decision without
a score entry (no experiences, or a budget decision that exploits) changes
nothing else. With quarantine on, the quarantine book is replayed along the
whole log (checkpoints hold no book; :func:`memtrial.curation.curator.replay`),
and each plan derived again takes the value reset after a detected change
(method 4.14) from the book as it stood at that plan. The result equals the
running state of an engine settled with the corrected outcome from the start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.curation import Curator, Event
from memtrial.curation.curator import replay as replay_book
from memtrial.curation.curator import setting_at_start
from memtrial.engine.checkpoints import Checkpoint, CheckpointPolicy, decode_frozen, encode_frozen, same_frozen
from memtrial.engine.checks import check_scored, float_array, same_scored
from memtrial.engine.config import EngineConfig
from memtrial.engine.history import DecisionEntry, History
from memtrial.engine.learning import (
    Outcome,
    Running,
    credit,
    learn,
    outcome_of,
    portfolio_outcome,
    rescore,
    scored_outcome,
    unlearn_sums,
)
from memtrial.errors import InputError, StateError
from memtrial.records import Decision, DecisionKind, ExperienceId, Plan, Settlement, Time
from memtrial.trust.gate import make_gate, pearson_scores
from memtrial.trust.log import LogKind
from memtrial.values import EmpiricalBayesLearner, LearnerMode
from memtrial.values.batchfit import Moment, predictions_at

__all__ = ["Recomputed", "corrected_outcome", "correction_entry", "recompute"]


@dataclass(slots=True)
class Recomputed:
    """What a correction's replay gives back: the running state, the corrected settlement, the index of the
    score entry it supersedes (None for a decision without one), the re-derived predictions of plans still
    awaiting their score, the last checkpoint's position (None: unchanged), how many log entries were replayed,
    the quarantine book rebuilt with the events the log lacks, and the later decisions whose gate score the
    replay changed, with their new scores (in log order)."""

    running: Running
    corrected: Settlement
    supersedes: int | None
    rederived: dict[str, dict[str, Any]]
    checkpointed_at: int | None
    n_replayed: int
    book: Curator | None = None
    book_events: list[Event] = field(default_factory=list)
    rescored: dict[str, float | None] = field(default_factory=dict)


def recompute(
    config: EngineConfig,
    history: History,
    running: Running,
    new_learner: Callable[[], EmpiricalBayesLearner],
    embeddings: Mapping[ExperienceId, NDArray[np.float64] | None],
    entry: DecisionEntry,
    realised: Outcome,
    settled_at: Time,
    rederived: Mapping[str, Mapping[str, Any]],
    policy: CheckpointPolicy,
) -> Recomputed:
    """The running state after correcting ``entry`` with ``realised`` (see the module docstring).

    running: the engine's running state now (its fallback and noise cost are updated in place, so give
    copies; its learner and gate are left alone); new_learner: makes a learner of the engine's settings;
    embeddings: the experiences' embeddings as the engine holds them now (content features are those
    of the experiences held now); rederived: the engine's re-derived predictions of plans awaiting a score.
    """
    previous = entry.settlement
    assert previous is not None and entry.decision is not None
    unlearn_sums(entry.plan, outcome_of(config, entry.plan, entry.decision, previous), running)
    if not (entry.plan.experience_ids and entry.plan.trial):  # no score entry: only the sums change
        alone = learn(config, entry.plan, realised, settled_at, running)
        return Recomputed(running, alone, None, {d: dict(v) for d, v in rederived.items()}, None, 0)
    supersedes = history.score_index(entry.decision_id)
    if supersedes is None:
        raise StateError(
            f"decision {entry.decision_id!r} is settled but the log holds no score for it", field="history"
        )
    checkpoint = history.checkpoint_at_or_before(supersedes)
    learner = _with_features(new_learner(), embeddings)
    gate = make_gate(config.gate)
    awaiting: dict[str, dict[str, Any]] = {}
    start = 0
    if checkpoint is not None:
        learner.load_state_dict(checkpoint.learner)
        gate.statistics.load_dict(checkpoint.gate)
        awaiting = {d: dict(v) for d, v in checkpoint.rederived.items()}
        start = checkpoint.position
    events = list(history.log_events(start))
    entries = history.entries_of(
        {d for _, kind, d in events if kind in (LogKind.PREDICTION, LogKind.SCORE)} | {entry.decision_id}
    )
    kept = _checkpoint_positions(events, start, policy)
    # 1. the learner's statistics along the log (no prediction changes them), taken at every plan
    contributions, _ = credit(entry.plan, realised)
    moments, statistics_at, before_corrected = _statistics_along(events, entries, learner, entry, contributions, kept)
    # 2. the value model at every plan, in one batch, and every mode's Pearson score of every plan the replay
    # derives and learns again, vectorised (a gate scores the selected mode's predictions: one of them)
    predicted = predictions_at(learner, moments)
    book, book_events = _reset_since_changes(config, history, events, entries, predicted, entry, contributions)
    scores = _mode_scores_of(events, predicted, entries, entry.decision_id)
    # 3. predictions, mode scores and gate scores in log order
    scoring = Running(learner, gate, running.fallback, running.noise)
    replay = _Replay(config, entries, scoring, new_learner, embeddings, awaiting, kept, statistics_at)
    corrected, pending, written, scored_again = replay.run(
        events, predicted, scores, entry, realised, settled_at, before_corrected
    )
    # the later scores the replay changed (each plan's predictions derived again): the correction's log entry
    # lists them, so the log holds every score the gate's statistics are made of
    rescored = {
        decision_id: score
        for decision_id, score in scored_again.items()
        if score != _stored(entries, decision_id).settlement.score  # type: ignore[union-attr]
    }
    # the history changes only once the replay has succeeded (a refused correction leaves it as it was)
    history.drop_checkpoints_after(supersedes)
    if written:
        history.add_checkpoints(written, policy.kept)
    last = written[-1].position if written else start
    rederived_now = _awaiting(awaiting, pending, entries)
    return Recomputed(scoring, corrected, supersedes, rederived_now, last, len(events), book, book_events, rescored)


def _reset_since_changes(
    config: EngineConfig,
    history: History,
    events: Sequence[tuple[int, str, str]],
    entries: Mapping[str, DecisionEntry],
    predicted: list[dict[LearnerMode, tuple[float, ...]]],
    entry: DecisionEntry,
    contributions: Mapping[ExperienceId, float],
) -> tuple[Curator | None, list[Event]]:
    """Each replayed plan's predictions (``predicted``, in log order, changed in place) with the value reset
    the engine applied at plan time (method 4.14), from the quarantine book as it stood at that plan along
    the corrected history: the book is replayed along the whole log (checkpoints hold no book), with the
    settings it was under. Returns the book after the log and the quarantines the log lacks. With the
    quarantine off now and no ``settings`` entry among ``events`` (the replay's stretch of the log), no plan
    replayed had a book, and the log before the stretch is not read."""
    if not config.quarantine.enabled and all(kind != LogKind.SETTINGS for _, kind, _ in events):
        return None, []
    log = [(logged.kind, logged.payload) for logged in history.log_entries()]
    first = setting_at_start(log, config.quarantine)
    on = 0 if first.enabled else _first_turned_on(log)
    if on is None:  # quarantine was never on: no book, no reset
        return None, []
    scored = history.entries_of({str(payload["date"]) for kind, payload in log[on:] if kind == LogKind.SCORE})

    def contributions_of(decision_id: str) -> Mapping[ExperienceId, float]:
        if decision_id == entry.decision_id:
            return contributions
        settled = _stored(scored, decision_id).settlement
        return {} if settled is None else settled.contributions

    planned = [d for _, kind, d in events if kind == LogKind.PREDICTION]
    position = {d: i for i, d in enumerate(planned)}

    def at_plan(decision_id: str, book: Curator) -> None:
        index = position.get(decision_id)
        if index is None:  # a plan before the replay's start
            return
        ids = _stored(entries, decision_id).plan.experience_ids
        reset = book.reset_values(ids)
        if reset:
            predicted[index] = {
                mode: tuple(reset.get(e, v) for e, v in zip(ids, values, strict=True))
                for mode, values in predicted[index].items()
            }

    return replay_book(first, log, contributions_of, at_plan)


def _first_turned_on(log: Sequence[tuple[str, Mapping[str, Any]]]) -> int | None:
    """The position of the first ``settings`` entry that turned the quarantine on (None: none did)."""
    for position, (kind, payload) in enumerate(log):
        change = payload.get("changes", {}).get("quarantine") if kind == LogKind.SETTINGS else None
        if change is not None and change["new"]["enabled"]:
            return position
    return None


def _stored(entries: Mapping[str, DecisionEntry], decision_id: str) -> DecisionEntry:
    """A decision of the log, from the history's entries (a StateError when it was pruned)."""
    found = entries.get(decision_id)
    if found is None:
        raise StateError(
            f"decision {decision_id!r} of the log is not in the history (was it pruned?): the state cannot be recomputed",
            field="history",
        )
    return found


def _statistics_along(
    events: Sequence[tuple[int, str, str]],
    entries: Mapping[str, DecisionEntry],
    learner: EmpiricalBayesLearner,
    entry: DecisionEntry,
    contributions: Mapping[ExperienceId, float],
    kept: Set[int],
) -> tuple[list[Moment], dict[int, dict[str, Any]], dict[str, Any]]:
    """The learner's statistics along the log (updated in place): the moment of every plan, the statistics
    at every checkpoint position ``kept``, and those just before the corrected score."""
    moments: list[Moment] = []
    statistics_at: dict[int, dict[str, Any]] = {}
    before_corrected: dict[str, Any] | None = None
    for index, kind, decision_id in events:
        if kind == LogKind.PREDICTION:
            moments.append((learner.statistics.snapshot(), _stored(entries, decision_id).plan.experience_ids))
        elif kind == LogKind.SCORE:
            if decision_id == entry.decision_id:
                before_corrected = learner.statistics.to_dict()
                learner.update(decision_id, contributions)
            else:
                settlement = _stored(entries, decision_id).settlement
                assert settlement is not None, "a scored decision is settled"
                learner.update(decision_id, settlement.contributions)
            if index + 1 in kept:
                statistics_at[index + 1] = learner.statistics.to_dict()
    if before_corrected is None:
        raise StateError(
            f"decision {entry.decision_id!r} is settled but the log holds no score for it", field="history"
        )
    return moments, statistics_at, before_corrected


@dataclass
class _Replay:
    """Step 3 of a correction: predictions, mode scores and gate scores in log order, and the checkpoints."""

    config: EngineConfig
    entries: Mapping[str, DecisionEntry]
    scoring: Running
    new_learner: Callable[[], EmpiricalBayesLearner]
    embeddings: Mapping[ExperienceId, NDArray[np.float64] | None]
    awaiting: dict[str, dict[str, Any]]
    kept: Set[int]
    statistics_at: Mapping[int, dict[str, Any]]

    def run(
        self,
        events: Sequence[tuple[int, str, str]],
        predicted: Sequence[Any],
        scores: Mapping[str, Any],
        entry: DecisionEntry,
        realised: Outcome,
        settled_at: Time,
        before_corrected: dict[str, Any],
    ) -> tuple[Settlement, dict[str, Plan], list[Checkpoint], dict[str, float | None]]:
        """(the corrected settlement, the plans still awaiting their score, the checkpoints written, the gate's
        score of every other decision scored again, in log order)."""
        learner, gate = self.scoring.learner, self.scoring.gate
        pending: dict[str, Plan] = {}
        written: list[Checkpoint] = []
        scored_again: dict[str, float | None] = {}
        corrected: Settlement | None = None
        plans = iter(predicted)
        for index, kind, decision_id in events:
            if kind == LogKind.PREDICTION:
                plan = _stored(self.entries, decision_id).plan
                pending[decision_id] = replace(plan, **_frozen(learner, next(plans), plan.experience_ids))
            elif kind == LogKind.WITHDRAWAL:
                pending.pop(decision_id, None)
                self.awaiting.pop(decision_id, None)
            elif kind == LogKind.SCORE:
                found = _stored(self.entries, decision_id)
                derived = pending.pop(decision_id, None)
                plan = derived or _served(found.plan, self.awaiting.pop(decision_id, None))
                if decision_id == entry.decision_id:
                    corrected = _learn_corrected(
                        self.config,
                        plan,
                        realised,
                        settled_at,
                        self.scoring,
                        self.new_learner,
                        self.embeddings,
                        before_corrected,
                    )
                elif derived is not None:
                    selected = LearnerMode(derived.learner_mode)
                    _add_scores(self.config, self.scoring, scores[decision_id], selected)
                    scored_again[decision_id] = scores[decision_id][selected]
                else:
                    assert found.settlement is not None
                    scored_again[decision_id] = rescore(self.config, plan, found.settlement.centred, self.scoring)
                if index + 1 in self.kept:
                    state = {"statistics": self.statistics_at[index + 1], "mode_scores": _mode_scores(learner)}
                    awaited = _awaiting(self.awaiting, pending, self.entries)
                    written.append(Checkpoint(index + 1, state, gate.statistics.to_dict(), awaited))
        assert corrected is not None
        return corrected, pending, written, scored_again


def _mode_scores_of(
    events: list[tuple[int, str, str]],
    predicted: list[dict[LearnerMode, tuple[float, ...]]],
    entries: Mapping[str, DecisionEntry],
    corrected_id: str,
) -> dict[str, dict[LearnerMode, float | None]]:
    """Each mode's Pearson score (None where undefined) of every plan the replay derives again and learns
    again from its stored settlement, by decision id: rows of one length in one :func:`pearson_scores` call."""
    scored = {d for _, kind, d in events if kind == LogKind.SCORE} - {corrected_id}
    rows: dict[int, list[tuple[str, LearnerMode, tuple[float, ...], list[float]]]] = {}
    plans = iter(predicted)
    for _, kind, decision_id in events:
        if kind != LogKind.PREDICTION:
            continue
        modes = next(plans)
        if decision_id not in scored:
            continue
        found = entries[decision_id]
        assert found.settlement is not None, "a scored decision is settled"
        realised = [float(found.settlement.centred[e]) for e in found.plan.experience_ids]
        for mode, values in modes.items():
            rows.setdefault(len(values), []).append((decision_id, mode, values, realised))
    result: dict[str, dict[LearnerMode, float | None]] = {}
    for members in rows.values():
        computed = pearson_scores([m[2] for m in members], [m[3] for m in members])
        for (decision_id, mode, _, _), value in zip(members, computed.tolist(), strict=True):
            result.setdefault(decision_id, {})[mode] = None if np.isnan(value) else float(value)
    return result


def _add_scores(
    config: EngineConfig, running: Running, scores: Mapping[LearnerMode, float | None], selected: LearnerMode
) -> None:
    """What :func:`memtrial.engine.learning.rescore` adds, from scores computed beforehand: the selected mode's
    predictions score the gate, every mode's score its own mode."""
    value = scores[selected]
    if value is not None:
        running.gate.statistics.add(value)
    if config.learner is LearnerMode.AUTO:
        for mode, score in scores.items():
            if score is not None:
                running.learner.record_score(mode, score)


def _with_features(
    learner: EmpiricalBayesLearner, embeddings: Mapping[ExperienceId, NDArray[np.float64] | None]
) -> EmpiricalBayesLearner:
    for experience_id, embedding in embeddings.items():
        if embedding is not None:
            learner.add_features(experience_id, embedding)
    return learner


def _checkpoint_positions(events: list[tuple[int, str, str]], start: int, policy: CheckpointPolicy) -> set[int]:
    """The positions of the checkpoints a replay writes: the newest ``policy.kept`` of those that fall due."""
    positions: list[int] = []
    last = start
    for index, kind, _ in events:
        if kind == LogKind.SCORE and policy.due(index + 1, last):
            last = index + 1
            positions.append(last)
    return set(positions[-policy.kept :])


def _mode_scores(learner: EmpiricalBayesLearner) -> dict[str, list[float]]:
    return {mode.value: [scores.count, scores.total] for mode, scores in learner.mode_scores.items()}


def _frozen(
    learner: EmpiricalBayesLearner, modes: Mapping[LearnerMode, tuple[float, ...]], ids: tuple[ExperienceId, ...]
) -> dict[str, Any]:
    """A plan's frozen prediction fields (as :func:`memtrial.engine.learning.frozen_predictions` makes them) from
    every mode's predictions, the mode being selected by the learner's mode scores now."""
    selected = learner.selected_mode
    return {
        "predictions": dict(zip(ids, modes[selected], strict=True)),
        "mode_predictions": {m.value: v for m, v in modes.items()},
        "learner_mode": selected.value,
    }


def _learn_corrected(
    config: EngineConfig,
    plan: Plan,
    realised: Outcome,
    settled_at: Time,
    scoring: Running,
    new_learner: Callable[[], EmpiricalBayesLearner],
    embeddings: Mapping[ExperienceId, NDArray[np.float64] | None],
    statistics: Mapping[str, Any],
) -> Settlement:
    """The corrected settlement through :func:`learn` itself, on a learner holding the statistics before
    it and the replay's mode scores; the gate's statistics, the mode scores and the sums move on."""
    learner = _with_features(new_learner(), embeddings)
    learner.load_state_dict({"statistics": statistics, "mode_scores": _mode_scores(scoring.learner)})
    settlement = learn(
        config, plan, realised, settled_at, Running(learner, scoring.gate, scoring.fallback, scoring.noise)
    )
    scoring.learner.mode_scores = learner.mode_scores
    return settlement


def _served(plan: Plan, rederived: Mapping[str, Any] | None) -> Plan:
    """A plan registered before the replay's start, with the predictions a correction derived again for it."""
    return plan if rederived is None else replace(plan, **decode_frozen(rederived))


def _awaiting(
    earlier: Mapping[str, Mapping[str, Any]], pending: Mapping[str, Plan], entries: Mapping[str, DecisionEntry]
) -> dict[str, dict[str, Any]]:
    """The re-derived predictions of plans still awaiting their score that differ from those they were served with."""
    result = {d: dict(v) for d, v in earlier.items()}
    for decision_id, plan in pending.items():
        frozen = {
            "predictions": plan.predictions,
            "mode_predictions": plan.mode_predictions,
            "learner_mode": plan.learner_mode,
        }
        if not same_frozen(entries[decision_id].plan, frozen):
            result[decision_id] = encode_frozen(frozen)
    return result


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
        prices = float_array(rel_prices, "rel_prices", "closes relative to the entry close, one row per session")
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


def correction_entry(
    decision_id: str,
    reason: str,
    supersedes: int | None,
    corrected: Settlement,
    rescored: Mapping[str, float | None],
) -> dict[str, Any]:
    """The log entry of a correction: the reason, the score entry it supersedes, the new score and
    contributions, and the later decisions whose score the replay changed, with their new scores (a later
    plan's predictions are derived again from the corrected values: method 4.10)."""
    return {
        "date": decision_id,
        "reason": reason,
        "supersedes": supersedes,
        "score": corrected.score,
        "realised": [[e, float(c)] for e, c in corrected.centred.items()],
        "rescored": [[d, score] for d, score in rescored.items()],
    }
