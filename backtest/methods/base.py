"""The method interface: decide from a date's context, observe its outcome at maturity.

A runner asks each method for its :class:`Trajectory` through a world's whole
:class:`Walk` (every date's context and, in maturity order, every outcome).
The default walks the calendar, calling ``decide`` and ``observe``; methods
whose dates can be computed together override :meth:`Method.trajectory`.
Methods never see each other, so a world's methods can be walked one after
the other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from memtrial.credit.banzhaf import contributions_by_date
from memtrial.credit.design import half_fraction
from memtrial.outcomes.mandates import utilities_by_date, utility

__all__ = [
    "HALF",
    "PAIRS",
    "GateState",
    "Method",
    "Outcome",
    "Scoring",
    "Trajectory",
    "Walk",
    "calendar",
    "pair_mask",
    "stacked",
    "without_quarantined",
]

HALF = half_fraction(4)
PAIRS = [mask for mask in HALF if mask.bit_count() == 2]


def pair_mask(first: int, second: int) -> int:
    """Mask of two retrieval positions."""
    return (1 << first) | (1 << second)


@dataclass(frozen=True, slots=True)
class Scoring:
    """How weights become utility in a world: risk aversion and fee (the previous book is the date's)."""

    gamma: float
    fee_bp: float = 15.0

    def utility(
        self, weights: NDArray[np.float64], rel: NDArray[np.float64], previous: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        batch = np.atleast_2d(weights)
        return np.asarray(utility(batch / batch.sum(axis=1, keepdims=True), rel, previous, self.gamma, self.fee_bp))


@dataclass(frozen=True, slots=True)
class Outcome:
    """A matured date: its context, the realised prices and the utilities everyone can use.

    draft_utilities: (16,) utility of every subset's draft; draft_mean_utility:
    the utility of the mean of the half-fraction's eight drafts.
    """

    context: DateContext
    rel: NDArray[np.float64]
    draft_utilities: NDArray[np.float64]
    reference_utility: float
    equal_utility: float
    draft_mean_utility: float = float("nan")
    half_contrasts: NDArray[np.float64] | None = None  # same-day Banzhaf contrasts of the half fraction's drafts


GateState = tuple[
    bool, float | None, float | None
]  # gate open, its statistic, the trust weight (None: acts by the gate)


@dataclass(slots=True)
class Trajectory:
    """What a method held on every presented date (weights as held, after any mandate projection;
    a (dates, n) array when every date has one universe) and, for gated methods, its gate at each
    decision: open, its statistic and the trust weight (NaN: none)."""

    weights: Sequence[NDArray[np.float64]]
    opens: NDArray[np.bool_] | None = None
    statistics: NDArray[np.float64] | None = None
    trust_weights: NDArray[np.float64] | None = None

    def states(self) -> list[GateState] | None:
        """The gate state of each date as tuples (None where a number is missing)."""
        if self.opens is None or self.statistics is None or self.trust_weights is None:
            return None
        return [
            (bool(is_open), None if np.isnan(value) else value, None if np.isnan(weight) else weight)
            for is_open, value, weight in zip(
                self.opens.tolist(), self.statistics.tolist(), self.trust_weights.tolist(), strict=True
            )
        ]


def stacked(rows: Sequence[NDArray[np.float64]]) -> Sequence[NDArray[np.float64]]:
    """Rows of one length as one (dates, n) array; rows of several lengths stay a list."""
    if len({row.shape for row in rows}) == 1:
        return np.array(rows, dtype=np.float64)  # type: ignore[return-value]  # an array of rows is a sequence of rows
    return list(rows)


def without_quarantined(
    retrieved: Sequence[int], drafts: NDArray[np.float64], quarantined: Sequence[int]
) -> tuple[tuple[int, ...], NDArray[np.float64]]:
    """A world's own retrieval with the experiences an engine keeps in quarantine left out (method 4.13: a
    plan may not name them), and the drafts of every mask of those left (``drafts`` holds one row per mask of
    ``retrieved``; mask m of the kept experiences is the mask of the same members in ``retrieved``)."""
    positions = [j for j, experience in enumerate(retrieved) if experience not in set(quarantined)]
    if len(positions) == len(retrieved):
        return tuple(retrieved), drafts
    rows = [
        sum(1 << positions[j] for j in range(len(positions)) if mask >> j & 1) for mask in range(1 << len(positions))
    ]
    return tuple(retrieved[j] for j in positions), np.asarray(drafts)[rows]


Event = tuple[str, int]  # ("decide" | "settle", position in the world's presented contexts)


def calendar(contexts: Sequence[DateContext]) -> list[Event]:
    """The order in which a runner decides and settles: before each decision, every pending
    decision that has matured by its session is settled, oldest first; the rest settle at the end."""
    events: list[Event] = []
    pending: list[int] = []
    for position, context in enumerate(contexts):
        while pending and contexts[pending[0]].maturity <= context.session:
            events.append(("settle", pending.pop(0)))
        events.append(("decide", position))
        pending.append(position)
    events.extend(("settle", position) for position in pending)
    return events


@dataclass
class Walk:
    """A world's presented dates, its calendar and every date's outcome, computed once for all methods.

    outcomes[position]: the date's :class:`Outcome` (utilities of its sixteen
    drafts, with rows nobody drafted scored as the reference; of the reference,
    equal weight and the half fraction's draft mean). ``project``: the world's
    mandate projection (None: weights are held as decided).
    """

    contexts: list[DateContext]
    rels: list[NDArray[np.float64]]
    scoring: Scoring
    project: Callable[[int, NDArray[np.float64]], NDArray[np.float64]] | None = None
    events: list[Event] = field(init=False)
    outcomes: list[Outcome] = field(init=False)
    trajectories: dict[tuple[str, bool], Trajectory] = field(default_factory=dict)  # by (method id, projected)
    _known: list[dict[bytes, float]] = field(init=False)

    def __post_init__(self) -> None:
        self.events = calendar(self.contexts)
        self.outcomes = [None] * len(self.contexts)  # type: ignore[list-item]
        self._known = [{} for _ in self.contexts]
        groups: dict[int, list[int]] = {}
        for position, context in enumerate(self.contexts):
            groups.setdefault(context.reference.shape[0], []).append(position)
        for positions in groups.values():
            contexts = [self.contexts[p] for p in positions]
            # rows nobody drafted (NaN) are scored as the reference; no method reads them
            drafts = np.array([np.where(np.isnan(c.drafts), c.reference, c.drafts) for c in contexts])  # (D, 16, n)
            rows = np.concatenate(
                [
                    drafts,
                    np.array([c.reference for c in contexts])[:, None],
                    np.array([c.equal for c in contexts])[:, None],
                    drafts[:, HALF].mean(axis=1)[:, None],
                ],
                axis=1,
            )
            scores = utilities_by_date(
                rows / rows.sum(axis=2, keepdims=True),
                np.array([self.rels[p] for p in positions]),
                np.array([c.previous for c in contexts]),
                self.scoring.gamma,
                self.scoring.fee_bp,
            )
            included = (np.asarray(HALF)[:, None] >> np.arange(4)[None, :]) & 1 > 0
            n_in = included.sum(axis=0)
            contrasts = contributions_by_date(scores[:, HALF], included, n_in, len(HALF) - n_in)
            for row, (position, context) in enumerate(zip(positions, contexts, strict=True)):
                values = scores[row]
                self.outcomes[position] = Outcome(
                    context,
                    self.rels[position],
                    values[:16],
                    float(values[16]),
                    float(values[17]),
                    float(values[18]),
                    contrasts[row],
                )
                known = self._known[position]
                for weights, value in zip(rows[row], values.tolist(), strict=True):
                    known.setdefault(weights.tobytes(), value)

    def utility(self, position: int, weights: NDArray[np.float64]) -> float:
        """The utility of holding ``weights`` over a date (exactly what scoring it with the date's drafts gives)."""
        key = weights.tobytes()
        known = self._known[position]
        value = known.get(key)
        if value is None:
            context = self.contexts[position]
            batch = weights[None, None, :] / weights.sum()
            value = known[key] = float(
                utilities_by_date(
                    batch, self.rels[position][None], context.previous[None], self.scoring.gamma, self.scoring.fee_bp
                )[0, 0]
            )
        return value

    def held(self, position: int, weights: NDArray[np.float64], projected: bool) -> NDArray[np.float64]:
        """A decided book as held: projected onto the mandate where the world has one and ``projected``."""
        if projected and self.project is not None:
            weights = self.project(self.contexts[position].index, weights)
        return np.asarray(weights, dtype=np.float64)

    def held_all(self, weights: Sequence[NDArray[np.float64]], projected: bool) -> Sequence[NDArray[np.float64]]:
        """:meth:`held` of every date (weights already as held where nothing is projected)."""
        if projected and self.project is not None:
            return stacked([self.held(position, row, projected) for position, row in enumerate(weights)])
        return weights

    def trajectory(self, method: Method, projected: bool = True) -> Trajectory:
        """``method``'s trajectory through this walk, computed once per (method id, projected)."""
        key = (method.id, projected and self.project is not None)
        if key not in self.trajectories:
            self.trajectories[key] = method.trajectory(self, projected)
        return self.trajectories[key]


class Method(ABC):
    """One decision policy. ``decide`` sees no outcome; ``observe`` gets it at maturity."""

    id: str = ""
    uses_gate: bool = False
    reads_chosen_utility = True  # False: observe ignores its chosen_utility argument (a walk passes NaN)

    def __init__(self, scoring: Scoring) -> None:
        self.scoring = scoring
        self.last_open: bool | None = None
        self.last_trust_weight: float | None = None  # methods acting by the trust dial

    @abstractmethod
    def decide(self, context: DateContext) -> NDArray[np.float64]:
        """Weights for the date."""

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:  # noqa: B027 - a hook, not an obligation
        """Learn from a matured date (default: nothing to learn)."""

    def values(self) -> dict[int, float] | None:
        """Learned value of each experience, where the method learns one."""
        return None

    def gate_state(self) -> GateState:
        return bool(self.last_open), getattr(self, "last_statistic", None), self.last_trust_weight

    def trajectory(self, walk: Walk, projected: bool = True) -> Trajectory:
        """Decide every date and observe every matured one, in the walk's calendar order.

        ``observe`` gets the book as held (projected) and its utility. Methods
        that learn nothing (``observe`` not overridden) are only asked to decide.
        """
        weights: list[NDArray[np.float64]] = [np.zeros(0)] * len(walk.contexts)
        states: list[GateState] = []
        learns = type(self).observe is not Method.observe
        for kind, position in walk.events:
            if kind == "decide":
                weights[position] = walk.held(position, self.decide(walk.contexts[position]), projected)
                if self.uses_gate:
                    states.append(self.gate_state())
            elif learns:
                held = weights[position]
                self.observe(
                    walk.outcomes[position],
                    held,
                    walk.utility(position, held) if self.reads_chosen_utility else float("nan"),
                )
        if not self.uses_gate:
            return Trajectory(stacked(weights))
        return Trajectory(
            stacked(weights),
            np.array([state[0] for state in states], dtype=bool),
            np.array([np.nan if state[1] is None else state[1] for state in states], dtype=np.float64),
            np.array([np.nan if state[2] is None else state[2] for state in states], dtype=np.float64),
        )
