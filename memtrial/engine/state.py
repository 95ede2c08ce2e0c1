"""An engine's state as JSON-ready data, restored exactly, and the upgrade of version-1 states.

The state is the running state alone (O(experiences)): the configuration,
the gate's hash, the clock, the experiences, the learner's statistics, the
gate's statistics and the log's head, the fallback's sums, the noise cost,
the position of the last state checkpoint and the predictions a correction
derived again for plans awaiting their score, and, for an in-memory history, the history itself. A store that keeps the
history elsewhere (the service) writes it with ``history=False`` and attaches
its own store when it restores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from numpy.typing import ArrayLike

from memtrial.action.budget import DraftCredit
from memtrial.action.fallback import AnchoredMixture
from memtrial.engine.config import EngineConfig
from memtrial.engine.history import DetachedHistory, History, InMemoryHistory
from memtrial.engine.learning import NoiseCost
from memtrial.errors import StateError
from memtrial.records import ExperienceId, decode_time, encode_time
from memtrial.trust.gate import make_gate
from memtrial.values import EmpiricalBayesLearner

if TYPE_CHECKING:
    from memtrial.engine.lifecycle import MemTrial

__all__ = ["STATE_VERSION", "restore", "state_of", "upgrade_v1_state"]

STATE_VERSION = 2


def state_of(engine: MemTrial, *, embeddings: bool = True, history: bool = True) -> dict[str, Any]:
    """The engine's state (``embeddings=False``: without the experience embeddings; ``history=False``:
    without the in-memory history)."""
    return {
        "embeddings_included": embeddings,
        "version": STATE_VERSION,
        "config": engine.config.to_dict(),
        "gate_hash": engine.gate_hash,
        "clock": None if engine.clock is None else encode_time(engine.clock),
        "experiences": [
            [e, None if x.embedding is None or not embeddings else [float(v) for v in x.embedding], x.active]
            for e, x in engine.experiences.items()
        ],
        "learner": engine.learner.state_dict(),
        "gate": engine.gate.state_dict(),
        "fallback": engine.fallback.to_dict(),
        "noise": engine.noise.to_dict(),
        # the credit of a budget, and of one set aside mid-life (it carries over if a budget is set again)
        **(
            {}
            if engine.config.draft_budget is None and engine.credit == DraftCredit()
            else {"budget": engine.credit.to_dict()}
        ),
        "checkpointed_at": engine.checkpointed_at,
        "rederived": {d: dict(v) for d, v in engine.rederived.items()},
        "history": engine.memory_history().to_dict() if history else None,
    }


def restore(
    cls: type[MemTrial],
    data: Mapping[str, Any],
    embeddings: Mapping[ExperienceId, ArrayLike] | None = None,
    *,
    history: History | None = None,
) -> MemTrial:
    """An engine of class ``cls`` restored from a state of this version, or from a version-1 state
    (its history moves to an in-memory history)."""
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
        engine = cls(EngineConfig.from_dict(data["config"]), history=attached)
        if engine.gate_hash != data["gate_hash"]:
            raise StateError("the gate configuration does not match its registered hash", field="gate_hash")
        engine.clock = None if data["clock"] is None else decode_time(data["clock"])
        external = embeddings or {}
        for experience_id, embedding, active in data["experiences"]:
            if embedding is None and not data["embeddings_included"]:
                embedding = external.get(experience_id)
            engine.add_experience(experience_id, embedding)
            engine.experiences[experience_id].active = bool(active)
        engine.learner.load_state_dict(data["learner"])
        engine.gate.load_state_dict(data["gate"])
        engine.fallback = AnchoredMixture.from_dict(data["fallback"])
        engine.noise = NoiseCost.from_dict(data.get("noise") or {"count": 0, "total": 0.0})
        engine.credit = DraftCredit.from_dict(data.get("budget"))
        engine.checkpointed_at = int(data.get("checkpointed_at", 0))
        engine.rederived = {str(d): dict(v) for d, v in (data.get("rederived") or {}).items()}
    except (KeyError, TypeError, ValueError) as error:
        raise StateError(f"state is malformed: {error!r}") from None
    return engine


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
