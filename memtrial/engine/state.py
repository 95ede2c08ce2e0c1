"""An engine's state as one frozen value (:class:`EngineState`), as JSON-ready data, restored exactly,
and the upgrade of version-1 states.

The engine hands this module a state value (:meth:`MemTrial.state`) and takes one back
(:meth:`MemTrial.from_state`); nothing here reads or writes an engine.

The state is the running state alone (O(experiences)): the configuration,
the gate's hash, the clock, the experiences, the learner's statistics, the
gate's statistics and the log's head, the fallback's sums, the noise cost,
the position of the last state checkpoint and the predictions a correction
derived again for plans awaiting their score, and, for an in-memory history, the history itself. A store that keeps the
history elsewhere (the service) writes it with ``history=False`` and attaches
its own store when it restores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.action.budget import DraftCredit
from memtrial.action.fallback import AnchoredMixture
from memtrial.drafting.retrieval import check_embedding
from memtrial.engine.checkpoints import CheckpointPolicy
from memtrial.engine.config import EngineConfig
from memtrial.engine.history import DetachedHistory, History, InMemoryHistory
from memtrial.engine.learning import NoiseCost
from memtrial.errors import ConfigError, InputError, StateError
from memtrial.records import ExperienceId, Time, decode_time, encode_time
from memtrial.trust.gate import make_gate
from memtrial.values import EmpiricalBayesLearner

__all__ = ["STATE_VERSION", "EngineState", "ExperienceState", "decode_state", "encode_state", "upgrade_v1_state"]

STATE_VERSION = 2


@dataclass(frozen=True, slots=True)
class ExperienceState:
    """One experience as the state holds it: its id, its embedding (None when left out) and whether it is active."""

    experience_id: ExperienceId
    embedding: ArrayLike | None
    active: bool


@dataclass(frozen=True, slots=True)
class EngineState:
    """An engine's running state as one value: what :meth:`MemTrial.state` hands out and
    :meth:`MemTrial.from_state` takes back.

    ``learner`` and ``gate`` are the learner's and the gate's state dicts; ``history`` is the
    in-memory history to write out (None: left out) or, on the way back, the history to attach.
    """

    config: EngineConfig
    gate_hash: str
    clock: Time | None
    experiences: tuple[ExperienceState, ...]
    learner: Mapping[str, Any]
    gate: Mapping[str, Any]
    fallback: AnchoredMixture
    noise: NoiseCost
    credit: DraftCredit
    checkpointed_at: int
    rederived: Mapping[str, Mapping[str, Any]]
    history: History | None
    curation: Mapping[str, Any] | None = None  # the quarantine book (method 4.13), when quarantine is on
    checkpoint_policy: CheckpointPolicy = CheckpointPolicy()  # how often checkpoints are written, how many kept


def encode_state(state: EngineState, *, embeddings: bool = True) -> dict[str, Any]:
    """The state as JSON-ready data (``embeddings=False``: without the experience embeddings; a state
    whose ``history`` is None: without the in-memory history)."""
    history = state.history
    if history is not None and not isinstance(history, InMemoryHistory):
        raise StateError("this engine's history is in an external store; ask the store", field="history")
    return {
        "embeddings_included": embeddings,
        "version": STATE_VERSION,
        "config": state.config.to_dict(),
        "gate_hash": state.gate_hash,
        "clock": None if state.clock is None else encode_time(state.clock),
        "experiences": [
            [
                x.experience_id,
                None if x.embedding is None or not embeddings else [float(v) for v in np.asarray(x.embedding)],
                x.active,
            ]
            for x in state.experiences
        ],
        "learner": state.learner,
        "gate": state.gate,
        "fallback": state.fallback.to_dict(),
        "noise": state.noise.to_dict(),
        # the credit of a budget, and of one set aside mid-life (it carries over if a budget is set again)
        **(
            {}
            if state.config.draft_budget is None and state.credit == DraftCredit()
            else {"budget": state.credit.to_dict()}
        ),
        "checkpointed_at": state.checkpointed_at,
        # a policy set by hand travels with the state (the default's states stay as they were)
        **(
            {}
            if state.checkpoint_policy == CheckpointPolicy()
            else {"checkpoint_policy": {"every": state.checkpoint_policy.every, "kept": state.checkpoint_policy.kept}}
        ),
        "rederived": {d: dict(v) for d, v in state.rederived.items()},
        "history": history.to_dict() if history is not None else None,
        **({} if state.curation is None else {"curation": dict(state.curation)}),
        # which experiences had no embedding (every other one's is left out), so a restore can tell a missing one
        # from none; a store that embeds every experience writes an empty list
        **(
            {}
            if embeddings
            else {"without_embeddings": [x.experience_id for x in state.experiences if x.embedding is None]}
        ),
    }


def _check_given(left_out: Sequence[ExperienceId], given: Mapping[ExperienceId, ArrayLike]) -> None:
    """The embeddings given back for a state written without them: every one it left out, of one length. More
    may be given (a store keeps one for every experience, those an engine of an older release held without one
    among them): an experience held without one takes it, as before the state listed what it left out."""
    missing = [e for e in left_out if e not in given]
    if missing:
        raise StateError(
            f"embeddings: the state left out the embeddings of {missing[:10]!r}{' ...' if len(missing) > 10 else ''}: "
            "pass each back (restored without it, retrieval by context embedding would never find it)",
            field="embeddings",
        )
    lengths = {int(_given(given, e).size) for e in left_out}  # type: ignore[union-attr]  # each checked, by id
    if len(lengths) > 1:
        raise StateError(f"embeddings must all have one length, got lengths {sorted(lengths)}", field="embeddings")


def _given(given: Mapping[ExperienceId, ArrayLike], experience_id: ExperienceId) -> NDArray[np.float64] | None:
    """The embedding given back for one experience (None: none given), checked as a new one would be."""
    if experience_id not in given:
        return None
    try:
        return check_embedding(given[experience_id], "embeddings")
    except InputError as error:
        raise StateError(f"embeddings[{experience_id!r}]: {error.message}", field="embeddings") from None


def decode_state(
    data: Mapping[str, Any],
    embeddings: Mapping[ExperienceId, ArrayLike] | None = None,
    *,
    history: History | None = None,
) -> EngineState:
    """The state of this version, or of a version-1 state (its history moves to an in-memory history);
    ``embeddings`` supplies those the state left out (required, ``{}`` for none, when it left them out),
    ``history`` the store of a state written without one."""
    try:
        if data["version"] == 1:
            data = upgrade_v1_state(data)
        if data["version"] != STATE_VERSION:
            raise StateError(
                f"state version {data['version']!r} is not supported (expected {STATE_VERSION})", field="version"
            )
        stored = data["history"]
        if stored is not None and history is not None:
            raise StateError("the state carries its own history; do not pass another", field="history")
        attached: History = InMemoryHistory.from_dict(stored) if stored is not None else history or DetachedHistory()
        config = EngineConfig.from_dict(data["config"])
        if embeddings is None and not data["embeddings_included"] and data["experiences"]:
            raise StateError(
                "the state was written without its experiences' embeddings (to_json(embeddings=False)): pass them "
                "back as embeddings={id: vector} (embeddings={} for experiences that never had one); restored "
                "without them, retrieval by context embedding would find none of them, silently",
                field="embeddings",
            )
        external = embeddings or {}
        if "without_embeddings" in data:  # a state that says which it left out (one written before: not checked)
            without = set(data["without_embeddings"])
            _check_given([e for e, _, _ in data["experiences"] if e not in without], external)
        elif "embeddings_left_out" in data:  # the same, as a development version listed it
            _check_given(list(data["embeddings_left_out"]), external)
        experiences = tuple(
            ExperienceState(
                experience_id,
                _given(external, experience_id) if embedding is None and not data["embeddings_included"] else embedding,
                bool(active),
            )
            for experience_id, embedding, active in data["experiences"]
        )
        return EngineState(
            config=config,
            gate_hash=data["gate_hash"],
            clock=None if data["clock"] is None else decode_time(data["clock"]),
            experiences=experiences,
            learner=data["learner"],
            gate=data["gate"],
            fallback=AnchoredMixture.from_dict(data["fallback"]),
            noise=NoiseCost.from_dict(data.get("noise") or {"count": 0, "total": 0.0}),
            credit=DraftCredit.from_dict(data.get("budget")),
            checkpointed_at=int(data.get("checkpointed_at", 0)),
            checkpoint_policy=_checkpoint_policy(data.get("checkpoint_policy", {})),
            rederived={str(d): dict(v) for d, v in (data.get("rederived") or {}).items()},
            history=attached,
            curation=data.get("curation"),
        )
    except KeyError as error:
        raise StateError(f"state is malformed: it lacks {error.args[0]!r}", field="state") from None
    except (TypeError, ValueError, AttributeError) as error:
        raise StateError(f"state is malformed: {error!r}", field="state") from None


def _checkpoint_policy(data: Mapping[str, Any]) -> CheckpointPolicy:
    """The checkpoint policy a state holds (its own rules broken: a malformed state, not a bad setting)."""
    try:
        return CheckpointPolicy(**data)
    except ConfigError as error:
        raise StateError(f"state is malformed: checkpoint_policy: {error.message}", field="checkpoint_policy") from None


def upgrade_v1_state(data: Mapping[str, Any]) -> dict[str, Any]:
    """A version-1 state (whole history inside) as a version-2 state with an in-memory history.

    The learner's statistics are rebuilt by replaying the records date by
    date, the gate's by replaying its scores in order, and the log, the
    entries and the records move to the history unchanged, so the chain and
    every stored decision stay exactly as they were.
    """
    config = EngineConfig.from_dict(data["config"])
    learner = EmpiricalBayesLearner(config.learner, n_components=config.n_components)
    by_date: dict[str, dict[ExperienceId, float]] = {}
    for date, experience_id, contribution in data["records"]:
        by_date.setdefault(str(date), {})[experience_id] = float(contribution)
    for date, contributions in by_date.items():
        learner.update(date, contributions)
    for mode, values in data["auto_scores"].items():
        for value in values:
            learner.record_score(mode, float(value))
    gate = make_gate(config.gate)
    for value in data["gate"]["scores"]:
        gate.statistics.add(float(value))
    log = data["gate"]["log"]
    gate_state = gate.state_dict()
    gate_state["log_length"] = len(log)
    gate_state["log_head"] = log[-1]["hash"] if log else data["gate_hash"]
    return {
        "embeddings_included": data["embeddings_included"],
        "version": STATE_VERSION,
        "config": data["config"],
        "gate_hash": data["gate_hash"],
        "clock": data["clock"],
        "experiences": data["experiences"],
        "learner": learner.state_dict(),
        "gate": gate_state,
        "fallback": data["fallback"],
        "history": {"entries": data["entries"], "log": log, "records": data["records"]},
    }
