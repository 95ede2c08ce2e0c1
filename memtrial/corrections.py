"""Corrections (method 4.10): an engine's running state recomputed from its history with one outcome replaced.

Plans and scores are taken in the order the log recorded them (a plan's
predictions depend on the scores before it): each plan's predictions are
derived again from what the learner would then have known, and each score
is learnt again, the corrected one with its new outcome through
:func:`memtrial.learning.learn`, the others from their stored contributions
through :func:`memtrial.learning.relearn` (no utilities, values or log entries
are computed for them: that is most of what settling costs). The replay
starts at the last checkpoint before the corrected score
(:mod:`memtrial.checkpoints`), or at the first entry when there is none, and
writes fresh checkpoints as it passes (the ones after the corrected score are
stale). The fallback's sums and the noise cost depend on outcomes alone: the
old outcome is taken out of them and the new one put in. A decision without
a score entry (no experiences, or a budget decision that exploits) changes
nothing else. The result equals the running state of an engine settled with
the corrected outcome from the start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.checkpoints import Checkpoint, CheckpointPolicy, decode_frozen, encode_frozen, same_frozen
from memtrial.checks import check_scored, same_scored
from memtrial.config import EngineConfig
from memtrial.errors import InputError, StateError
from memtrial.history import DecisionEntry, History
from memtrial.learning import (
    Outcome,
    Running,
    frozen_predictions,
    learn,
    outcome_of,
    portfolio_outcome,
    relearn,
    scored_outcome,
    unlearn_sums,
)
from memtrial.records import Decision, DecisionKind, ExperienceId, Plan, Settlement, Time
from memtrial.trust import make_gate
from memtrial.values import EmpiricalBayesLearner

__all__ = ["Recomputed", "corrected_outcome", "correction_entry", "recompute"]


@dataclass(slots=True)
class Recomputed:
    """What a correction's replay gives back: the running state, the corrected settlement, the index of the
    score entry it supersedes (None for a decision without one), the re-derived predictions of plans still
    awaiting their score, the last checkpoint's position (None: unchanged), and how many log entries were replayed."""

    running: Running
    corrected: Settlement
    supersedes: int | None
    rederived: dict[str, dict[str, Any]]
    checkpointed_at: int | None
    n_replayed: int


def recompute(
    config: EngineConfig,
    history: History,
    running: Running,
    fresh: EmpiricalBayesLearner,
    embeddings: Mapping[ExperienceId, NDArray[np.float64] | None],
    entry: DecisionEntry,
    realised: Outcome,
    settled_at: Time,
    rederived: Mapping[str, Mapping[str, Any]],
    policy: CheckpointPolicy,
) -> Recomputed:
    """The running state after correcting ``entry`` with ``realised`` (see the module docstring).

    running: the engine's running state now (its fallback and noise cost are updated in place; its
    learner and gate are left alone); fresh: a new learner of the engine's settings; embeddings: the
    experiences' embeddings as the engine holds them now (content features are those of the
    experiences held now); rederived: the engine's re-derived predictions of plans awaiting a score.
    """
    previous = entry.settlement
    assert previous is not None and entry.decision is not None
    old = outcome_of(config, entry.plan, entry.decision, previous)
    if not (entry.plan.experience_ids and entry.plan.trial):  # no score entry: only the sums change
        unlearn_sums(entry.plan, old, running)
        corrected = learn(config, entry.plan, realised, settled_at, running)
        return Recomputed(running, corrected, None, {d: dict(v) for d, v in rederived.items()}, None, 0)
    supersedes = history.score_index(entry.decision_id)
    if supersedes is None:
        raise StateError(
            f"decision {entry.decision_id!r} is settled but the log holds no score for it", field="history"
        )
    checkpoint = history.checkpoint_at_or_before(supersedes)
    history.drop_checkpoints_after(supersedes)
    for experience_id, embedding in embeddings.items():
        if embedding is not None:
            fresh.add_features(experience_id, embedding)
    gate = make_gate(config.gate)
    awaiting: dict[str, dict[str, Any]] = {}
    start = 0
    if checkpoint is not None:
        fresh.load_state_dict(checkpoint.learner)
        gate.statistics.load_dict(checkpoint.gate)
        awaiting = {d: dict(v) for d, v in checkpoint.rederived.items()}
        start = checkpoint.position
    replay = Running(fresh, gate, running.fallback, running.noise)
    unlearn_sums(entry.plan, old, replay)
    events = list(history.log_events(start))
    entries = history.entries_of({d for _, kind, d in events if kind in ("prediction", "score")} | {entry.decision_id})

    def stored(decision_id: str) -> DecisionEntry:
        found = entries.get(decision_id)
        if found is None:
            raise StateError(
                f"decision {decision_id!r} of the log is not in the history (was it pruned?): the state cannot be recomputed",
                field="history",
            )
        return found

    pending: dict[str, Plan] = {}
    written: list[Checkpoint] = []
    last = start
    corrected: Settlement | None = None
    for index, kind, decision_id in events:
        if kind == "prediction":
            plan = stored(decision_id).plan
            pending[decision_id] = replace(plan, **frozen_predictions(fresh, plan.experience_ids))
        elif kind == "withdrawal":
            pending.pop(decision_id, None)
            awaiting.pop(decision_id, None)
        elif kind == "score":
            found = stored(decision_id)
            plan = pending.pop(decision_id, None) or _served(found.plan, awaiting.pop(decision_id, None))
            if decision_id == entry.decision_id:
                corrected = learn(config, plan, realised, settled_at, replay)
            else:
                assert found.settlement is not None, "a scored decision is settled"
                relearn(config, plan, found.settlement, replay)
            if policy.due(index + 1, last):
                last = index + 1
                written.append(
                    Checkpoint(
                        last, fresh.state_dict(), gate.statistics.to_dict(), _awaiting(awaiting, pending, entries)
                    )
                )
    if corrected is None:
        raise StateError(
            f"decision {entry.decision_id!r} is settled but the log holds no score for it", field="history"
        )
    if written:
        history.add_checkpoints(written[-policy.kept :], policy.kept)
    return Recomputed(replay, corrected, supersedes, _awaiting(awaiting, pending, entries), last, len(events))


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
