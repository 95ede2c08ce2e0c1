"""Records of the decision lifecycle: plan, decision, settlement.

Each converts to and from plain JSON-ready dicts with exact round trips
(floats are written with ``repr`` precision; times and ids keep their type).
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.errors import InputError, StateError
from memtrial.numeric.plain import plain_number
from memtrial.trust.gate import TrustDecision

#: set while an existing engine's settings are read back or changed: the rules on new settings (k = 1 under a
#: half fraction, gamma's bound, the quarantine's bounds) do not refuse a state or a log entry made before them
_EXISTING: contextvars.ContextVar[bool] = contextvars.ContextVar("memtrial_existing_settings", default=False)


@contextlib.contextmanager
def existing_settings() -> Iterator[None]:
    """Settings made inside are an existing engine's (read back, or with a setting changed)."""
    token = _EXISTING.set(True)
    try:
        yield
    finally:
        _EXISTING.reset(token)


def reading_existing() -> bool:
    """Whether the settings being made are an existing engine's (:func:`existing_settings`)."""
    return _EXISTING.get()


__all__ = [
    "Action",
    "Decision",
    "DecisionKind",
    "Dial",
    "ExperienceId",
    "Plan",
    "Settlement",
    "Time",
    "check_experience_id",
    "check_text_id",
    "decode_time",
    "encode_time",
    "plain_number",
    "text_or_flag",
]

ExperienceId = str | int
Time = int | float | dt.datetime | dt.date


#: what NumPy would read as a number nobody gave: a text ("0.5" is 0.5) or a true/false (True is 1.0)
_NOT_NUMBERS = (str, bytes, bool, np.bool_, np.str_, np.bytes_)


def text_or_flag(value: Any) -> bool:
    """Whether ``value`` (a number, or nested lists or an array of them) holds a text or a true/false anywhere:
    NumPy would read ``"0.5"`` as 0.5 and ``True`` as 1.0, a number nobody gave. An array of numbers is answered
    from its dtype; lists are read once as objects (rows of unequal lengths one by one)."""
    if isinstance(value, np.ndarray) and value.dtype.kind != "O":
        return value.dtype.kind in "bUS"
    if isinstance(value, _NOT_NUMBERS):
        return True
    if not isinstance(value, list | tuple | np.ndarray):
        return False
    rows = isinstance(value, list | tuple) and len(value) > 0
    if rows and all(isinstance(item, np.ndarray) and item.dtype.kind != "O" for item in value):  # rows as arrays
        return any(item.dtype.kind in "bUS" for item in value)
    try:
        items = np.asarray(value, dtype=object).ravel().tolist()
    except ValueError:  # rows of unequal lengths, nested unevenly
        items = list(value)
    kinds = set(map(type, items))
    if any(issubclass(kind, _NOT_NUMBERS) for kind in kinds):
        return True
    nested = (list, tuple, np.ndarray)
    return any(issubclass(kind, nested) for kind in kinds) and any(
        text_or_flag(item) for item in items if isinstance(item, nested)
    )


def check_experience_id(value: object, field: str = "experience_id", *, listed: bool = False) -> ExperienceId:
    """An experience id: an int, or a non-empty str that is text (no lone surrogate: the state is UTF-8);
    ``listed``: one of the ids ``field`` lists (its message says each id, not the list, must be one)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        what = f"{field}: each id" if listed else field
        hint = (
            " (a NumPy integer: give int(id), the id the state is written with)"
            if isinstance(value, np.integer)
            else ""
        )
        raise InputError(f"{what} must be a str or int{hint}, got {value!r}", field=field)
    if isinstance(value, str):
        check_text_id(value, field)
    return value


def check_text_id(value: str, field: str) -> None:
    """A non-empty str the state can write (UTF-8: no lone surrogate), or an InputError naming ``field``."""
    if not value:
        raise InputError(f"{field} must be a non-empty str", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            f"{field} must be text UTF-8 can write (no lone surrogate), got {value!r}", field=field
        ) from None


def encode_time(value: Time, field: str = "time") -> dict[str, Any]:
    """A time as a tagged JSON value (exact round trip); a value that is not one is an InputError naming
    ``field``."""
    if isinstance(value, dt.datetime):
        return {"type": "datetime", "value": value.isoformat()}
    if isinstance(value, dt.date):
        return {"type": "date", "value": value.isoformat()}
    what = "a time" if field == "time" else field
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{what} must be an int, float, date or datetime, got {value!r}", field=field)
    if isinstance(value, float) and not np.isfinite(value):
        raise InputError(f"{what} must be finite, got {value!r}", field=field)
    return {"type": "int" if isinstance(value, int) else "float", "value": value}


def decode_time(data: Mapping[str, Any]) -> Time:
    try:
        kind, value = data["type"], data["value"]
        if kind == "datetime":
            return dt.datetime.fromisoformat(value)
        if kind == "date":
            return dt.date.fromisoformat(value)
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
    except (KeyError, TypeError, ValueError) as error:
        raise StateError(f"malformed time {data!r}: {error}", field="time") from None
    raise StateError(f"unknown time type {kind!r}", field="time")


def _floats(values: NDArray[np.float64] | Sequence[float]) -> list[float]:
    return [float(v) for v in values]


def _read_only(record: object, names: Sequence[str]) -> None:
    """A record's arrays as read-only copies (one already read-only is kept): what the engine keeps cannot be
    changed through what it returns, and an array the record was made from stays its owner's to change."""
    for name in names:
        value = getattr(record, name)
        if isinstance(value, np.ndarray) and value.flags.writeable:
            frozen = value.copy()
            frozen.flags.writeable = False
            object.__setattr__(record, name, frozen)


class DecisionKind(StrEnum):
    """What a decision's drafts are: portfolio weights settled by prices, or any JSON settled by a rule (method 4.9)."""

    PORTFOLIO = "portfolio"
    SCORED = "scored"


class Action(StrEnum):
    """What a decision acted on."""

    SUBSET = "subset"
    MIXTURE = "mixture"
    DIAL = "dial"
    REFERENCE = "reference"  # scored decisions whose drafts cannot be mixed: the designated reference draft


@dataclass(frozen=True, slots=True)
class Dial:
    """The trust dial of one decision, frozen at plan time (method 4.8).

    trust_weight: omega in [0, 1], the share played on memory;
    log_evidence: log K_t of the betting e-process it comes from;
    noise_cost: kappa, the estimated utility cost of one draft's noise (None
    before any estimate: the combination is then the best subset alone);
    gains: predicted gain of each designed subset (0 for the empty one);
    combination: pi, the weights of the designed drafts in the memory action.
    """

    trust_weight: float
    log_evidence: float
    noise_cost: float | None
    gains: tuple[float, ...]
    combination: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "trust_weight": self.trust_weight,
            "log_evidence": self.log_evidence,
            "noise_cost": self.noise_cost,
            "gains": list(self.gains),
            "combination": list(self.combination),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Dial:
        cost = data["noise_cost"]
        return cls(
            float(data["trust_weight"]),
            float(data["log_evidence"]),
            None if cost is None else float(cost),
            tuple(float(v) for v in data["gains"]),
            tuple(float(v) for v in data["combination"]),
        )


@dataclass(frozen=True, slots=True)
class Plan:
    """A planned decision: what was retrieved, what to draft, what was predicted.

    subsets[i] are the experience ids of the i-th draft (design run masks[i]).
    predictions: frozen predicted value of each retrieved experience (utility
    units) from ``learner_mode``; trust and q are the gate state and fallback
    weight frozen at plan time, before any outcome of this decision exists.
    """

    decision_id: str
    time: Time
    maturity: Time
    experience_ids: tuple[ExperienceId, ...]
    masks: tuple[int, ...]
    subsets: tuple[tuple[ExperienceId, ...], ...]
    predictions: Mapping[ExperienceId, float]
    mode_predictions: Mapping[str, tuple[float, ...]]
    learner_mode: str
    trust: TrustDecision
    q: float
    reference: NDArray[np.float64]
    previous: NDArray[np.float64]
    risky: NDArray[np.bool_] | None
    defensive: NDArray[np.bool_] | None
    dial: Dial | None = None
    kind: DecisionKind = DecisionKind.PORTFOLIO
    trial: bool = True  # False: a budget decision that exploits (method 4.11) and learns nothing
    memory_share: float = 0.0  # an exploiting decision's share on memory's draft
    extra_reference: bool = False  # the last draft is the memory-free reference, outside a design without one

    def __post_init__(self) -> None:
        _read_only(self, ("reference", "previous", "risky", "defensive"))

    @property
    def design_rows(self) -> int:
        """How many of the drafts (the first ones) are design runs, credited and combined."""
        return len(self.masks) - int(self.extra_reference)

    @property
    def draft_calls(self) -> int:
        """The drafts this plan asks for (one LLM call each)."""
        return len(self.masks)

    @property
    def n_assets(self) -> int:
        return int(self.reference.shape[0])

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision_id": self.decision_id,
            "time": encode_time(self.time),
            "maturity": encode_time(self.maturity),
            "experience_ids": list(self.experience_ids),
            "masks": list(self.masks),
            "predictions": [float(self.predictions[e]) for e in self.experience_ids],
            "mode_predictions": {mode: list(values) for mode, values in self.mode_predictions.items()},
            "learner_mode": self.learner_mode,
            "trust": self.trust.to_dict(),
            "q": self.q,
            "reference": _floats(self.reference),
            "previous": _floats(self.previous),
            "risky": None if self.risky is None else [bool(x) for x in self.risky],
            "defensive": None if self.defensive is None else [bool(x) for x in self.defensive],
            **({} if self.dial is None else {"dial": self.dial.to_dict()}),
            **({} if self.kind is DecisionKind.PORTFOLIO else {"kind": self.kind.value}),
            **({} if self.trial else {"trial": False, "memory_share": self.memory_share}),
            **({"extra_reference": True} if self.extra_reference else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        ids = tuple(data["experience_ids"])
        masks = tuple(int(m) for m in data["masks"])
        return cls(
            decision_id=str(data["decision_id"]),
            time=decode_time(data["time"]),
            maturity=decode_time(data["maturity"]),
            experience_ids=ids,
            masks=masks,
            subsets=tuple(tuple(e for j, e in enumerate(ids) if m >> j & 1) for m in masks),
            predictions=dict(zip(ids, (float(v) for v in data["predictions"]), strict=True)),
            mode_predictions={
                mode: tuple(float(v) for v in values) for mode, values in data["mode_predictions"].items()
            },
            learner_mode=str(data["learner_mode"]),
            trust=TrustDecision.from_dict(data["trust"]),
            q=float(data["q"]),
            reference=np.asarray(data["reference"], dtype=np.float64),
            previous=np.asarray(data["previous"], dtype=np.float64),
            risky=None if data["risky"] is None else np.asarray(data["risky"], dtype=bool),
            defensive=None if data["defensive"] is None else np.asarray(data["defensive"], dtype=bool),
            dial=None if data.get("dial") is None else Dial.from_dict(data["dial"]),
            kind=DecisionKind(data.get("kind", "portfolio")),
            trial=bool(data.get("trial", True)),
            memory_share=float(data.get("memory_share", 0.0)),
            extra_reference=bool(data.get("extra_reference", False)),
        )


@dataclass(frozen=True, slots=True)
class Decision:
    """The chosen weights and why.

    action SUBSET: ``subset``/``mask`` name the acted-on draft; ``q`` is None.
    action MIXTURE: weights = q * reference + (1 - q) * mean(drafts).
    action DIAL: weights = omega * sum_S pi_S draft_S + (1 - omega) * the
    mixture with q; ``dial`` holds omega and pi.
    action REFERENCE (scored decisions whose drafts are not vectors): the
    designated reference draft.
    predicted_gain: predicted value of the best designed subset.
    played: (scored decisions) the index of the draft played as it is (None: a blend);
    reference_index: the draft designated as the reference (scored decisions; portfolio decisions
    whose reference is their memory-free draft).
    """

    decision_id: str
    weights: NDArray[np.float64]
    action: Action
    subset: tuple[ExperienceId, ...] | None
    mask: int | None
    q: float | None
    trust: TrustDecision
    predictions: Mapping[ExperienceId, float]
    predicted_gain: float
    learner_mode: str
    explanation: str
    drafts: NDArray[np.float64]
    dial: Dial | None = None
    played: int | None = None
    reference_index: int | None = None

    def __post_init__(self) -> None:
        _read_only(self, ("weights", "drafts"))

    @property
    def draft_calls(self) -> int:
        """The drafts this decision was made from (one LLM call each)."""
        return int(self.drafts.shape[0])

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision_id": self.decision_id,
            "weights": _floats(self.weights),
            "action": self.action.value,
            "subset": None if self.subset is None else list(self.subset),
            "mask": self.mask,
            "q": self.q,
            "trust": self.trust.to_dict(),
            "predictions": [[e, float(v)] for e, v in self.predictions.items()],
            "predicted_gain": self.predicted_gain,
            "learner_mode": self.learner_mode,
            "explanation": self.explanation,
            "drafts": [_floats(row) for row in self.drafts],
            **({} if self.dial is None else {"dial": self.dial.to_dict()}),
            **(
                {} if self.reference_index is None else {"played": self.played, "reference_index": self.reference_index}
            ),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        return cls(
            decision_id=str(data["decision_id"]),
            weights=np.asarray(data["weights"], dtype=np.float64),
            action=Action(data["action"]),
            subset=None if data["subset"] is None else tuple(data["subset"]),
            mask=data["mask"],
            q=data["q"],
            trust=TrustDecision.from_dict(data["trust"]),
            predictions={e: float(v) for e, v in data["predictions"]},
            predicted_gain=float(data["predicted_gain"]),
            learner_mode=str(data["learner_mode"]),
            explanation=str(data["explanation"]),
            drafts=np.asarray(data["drafts"], dtype=np.float64).reshape(len(data["drafts"]), -1),
            dial=None if data.get("dial") is None else Dial.from_dict(data["dial"]),
            played=data.get("played"),
            reference_index=data.get("reference_index"),
        )


@dataclass(frozen=True, slots=True)
class Settlement:
    """What a matured decision revealed (utilities in decimal units).

    draft_utilities[i] belongs to design run masks[i]; contributions and
    centred are keyed by experience id; score is the gate's Pearson score
    (None when skipped); values are posterior means after the update.
    Scored decisions carry their ``outcome`` and ``rule`` (``rule`` None: the
    caller gave the utilities) and no prices; mean_utility and chosen_utility
    are None where no rule could score a blend of the drafts.
    """

    decision_id: str
    settled_at: Time
    rel_prices: NDArray[np.float64]
    draft_utilities: NDArray[np.float64]
    reference_utility: float
    mean_utility: float | None
    chosen_utility: float | None
    mixture_utilities: NDArray[np.float64]
    contributions: Mapping[ExperienceId, float]
    centred: Mapping[ExperienceId, float]
    interactions: Mapping[str, float]
    score: float | None
    values: Mapping[ExperienceId, float]
    outcome: Any = None
    rule: str | None = None
    scored: bool = False

    def __post_init__(self) -> None:
        _read_only(self, ("rel_prices", "draft_utilities", "mixture_utilities"))

    def to_dict(self, *, mixtures: bool = True) -> dict[str, Any]:
        """JSON-ready dict; ``mixtures=False`` leaves out the 201 mixture utilities
        (already added to the fallback's sums; a store may not need them)."""
        return {
            "decision_id": self.decision_id,
            "settled_at": encode_time(self.settled_at),
            "rel_prices": [_floats(row) for row in self.rel_prices],
            "draft_utilities": _floats(self.draft_utilities),
            "reference_utility": self.reference_utility,
            "mean_utility": self.mean_utility,
            "chosen_utility": self.chosen_utility,
            "mixture_utilities": _floats(self.mixture_utilities) if mixtures else None,
            "contributions": [[e, float(v)] for e, v in self.contributions.items()],
            "centred": [[e, float(v)] for e, v in self.centred.items()],
            "interactions": dict(self.interactions),
            "score": self.score,
            "values": [[e, float(v)] for e, v in self.values.items()],
            **({"scored": True, "outcome": self.outcome, "rule": self.rule} if self.scored else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Settlement:
        return cls(
            decision_id=str(data["decision_id"]),
            settled_at=decode_time(data["settled_at"]),
            rel_prices=np.asarray(data["rel_prices"], dtype=np.float64),
            draft_utilities=np.asarray(data["draft_utilities"], dtype=np.float64),
            reference_utility=float(data["reference_utility"]),
            mean_utility=None if data["mean_utility"] is None else float(data["mean_utility"]),
            chosen_utility=None if data["chosen_utility"] is None else float(data["chosen_utility"]),
            mixture_utilities=np.asarray(data["mixture_utilities"] or [], dtype=np.float64),
            contributions={e: float(v) for e, v in data["contributions"]},
            centred={e: float(v) for e, v in data["centred"]},
            interactions={str(k): float(v) for k, v in data["interactions"].items()},
            score=data["score"],
            values={e: float(v) for e, v in data["values"]},
            outcome=data.get("outcome"),
            rule=data.get("rule"),
            scored=bool(data.get("scored", False)),
        )
