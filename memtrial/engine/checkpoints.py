"""State checkpoints: where a correction's replay starts (method 4.10).

A correction replays an engine's history from the last checkpoint before the
corrected score instead of from the first decision. A :class:`Checkpoint` at
``position`` p holds what the replay would hold after the log's first p
entries:

- the learner's statistics and prequential mode scores,
- the gate's statistics,
- the predictions derived again (by an earlier correction) for plans
  registered before p and still awaiting their score, by decision id
  (``rederived``: plans whose re-derived predictions equal those they were
  served with are not listed).

The fallback's sums and the noise cost are sums over settled outcomes that do
not depend on any prediction; a correction updates them by taking the old
outcome out and putting the new one in, so a checkpoint does not carry them.
Content features are not stored: a replay uses those of the experiences held
now (as a replay from the first decision does).

Storage is bounded: the engine writes a checkpoint after the first score at
least ``every`` log entries past the previous one and keeps the newest
``kept`` (:class:`CheckpointPolicy`), so a checkpoint is O(experiences + open
decisions) and an agent holds at most ``kept`` of them whatever its age.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memtrial.errors import ConfigError
from memtrial.records import Plan

__all__ = [
    "CHECKPOINTS_KEPT",
    "CHECKPOINT_EVERY",
    "Checkpoint",
    "CheckpointPolicy",
    "decode_frozen",
    "encode_frozen",
    "same_frozen",
]

#: Log entries between checkpoints (a decision writes two: its prediction and its score).
CHECKPOINT_EVERY = 32
#: Checkpoints an agent keeps (the newest): with ``CHECKPOINT_EVERY`` they reach back about 128 decisions.
CHECKPOINTS_KEPT = 8


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    """How often an engine writes a checkpoint (``every`` log entries) and how many it keeps (``kept``)."""

    every: int = CHECKPOINT_EVERY
    kept: int = CHECKPOINTS_KEPT

    def __post_init__(self) -> None:
        for name in ("every", "kept"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"checkpoint {name} must be an int >= 1, got {value!r}", field=name)

    def due(self, position: int, last: int) -> bool:
        """Whether a replay or an engine at log ``position`` writes a checkpoint, the last one being at ``last``."""
        return position - last >= self.every


def encode_frozen(frozen: Mapping[str, Any]) -> dict[str, Any]:
    """A plan's frozen prediction fields (:func:`memtrial.engine.learning.frozen_predictions`) as JSON-ready data."""
    return {
        "predictions": [[e, float(v)] for e, v in frozen["predictions"].items()],
        "mode_predictions": {m: [float(v) for v in values] for m, values in frozen["mode_predictions"].items()},
        "learner_mode": str(frozen["learner_mode"]),
    }


def decode_frozen(data: Mapping[str, Any]) -> dict[str, Any]:
    """The frozen prediction fields of :func:`encode_frozen`'s data, ready for ``dataclasses.replace(plan, ...)``."""
    return {
        "predictions": {e: float(v) for e, v in data["predictions"]},
        "mode_predictions": {str(m): tuple(float(v) for v in values) for m, values in data["mode_predictions"].items()},
        "learner_mode": str(data["learner_mode"]),
    }


def same_frozen(plan: Plan, frozen: Mapping[str, Any]) -> bool:
    """Whether re-derived prediction fields equal those the plan was served with (exactly)."""
    return (
        dict(plan.predictions) == dict(frozen["predictions"])
        and {m: tuple(v) for m, v in plan.mode_predictions.items()}
        == {m: tuple(v) for m, v in frozen["mode_predictions"].items()}
        and plan.learner_mode == frozen["learner_mode"]
    )


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The replay state after the log's first ``position`` entries (see the module docstring).

    learner: :meth:`EmpiricalBayesLearner.state_dict`; gate: :meth:`GateStatistics.to_dict`;
    rederived: decision id -> :func:`encode_frozen` data.
    """

    position: int
    learner: Mapping[str, Any]
    gate: Mapping[str, Any]
    rederived: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.position, bool) or not isinstance(self.position, int) or self.position < 0:
            raise ConfigError(f"checkpoint position must be an int >= 0, got {self.position!r}", field="position")

    def to_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "learner": dict(self.learner),
            "gate": dict(self.gate),
            "rederived": {d: dict(v) for d, v in self.rederived.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checkpoint:
        return cls(int(data["position"]), data["learner"], data["gate"], dict(data.get("rederived") or {}))
