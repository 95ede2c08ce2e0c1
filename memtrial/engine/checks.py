"""The lifecycle's input checks: times, a decision's universe and reference, a scored settlement's inputs.

Each raises where bad input enters, naming the parameter and the rule
(:class:`~memtrial.errors.InputError` and its kin), so the engine's methods
read as the lifecycle itself.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.credit.design import DesignKind
from memtrial.engine.config import SCORED_DESIGN
from memtrial.errors import ConfigError, InputError, PrematureSettlementError, TimeOrderError, parse_choice
from memtrial.outcomes.mandates import Investor, check_weights, project
from memtrial.outcomes.scoring import Rule
from memtrial.outcomes.scoring import rule as scoring_rule
from memtrial.records import DecisionKind, Plan, Settlement, Time, check_text_id, encode_time, text_or_flag

__all__ = [
    "MAX_UTILITY",
    "Universe",
    "check_plan_times",
    "check_reason",
    "check_scored",
    "check_scored_design",
    "check_utility_range",
    "float_array",
    "later_or_equal",
    "rows_of",
    "same_scored",
    "settled_at_or_after",
    "shown",
    "universe_arrays",
]

#: the largest utility, in absolute value, a scored settlement may give: the engine squares differences of
#: utilities and sums the squares over decisions, which overflows to inf, then NaN, from about 1e154 on; 1e100
#: leaves room for any unit a caller scores in
MAX_UTILITY = 1e100

Universe = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_] | None, NDArray[np.bool_] | None]


def shown(value: Time | None) -> str:
    """A time as people write it (ISO 8601 for dates and datetimes)."""
    return value.isoformat() if isinstance(value, dt.date) else repr(value)


def later_or_equal(first: Time, second: Time, what: str) -> bool:
    """first >= second, or an InputError naming ``what`` (the argument being checked, as its field) for times
    that cannot be compared."""
    try:
        return bool(first >= second)  # type: ignore[operator]
    except TypeError:
        raise InputError(f"{what}: cannot compare {first!r} with {second!r} (mix of time types)", field=what) from None


def check_reason(reason: object) -> None:
    """A release's, withdrawal's or correction's reason: a str with text that the log can record (UTF-8: no lone
    surrogate), or an InputError naming ``reason``, before anything changes."""
    if not isinstance(reason, str) or not reason.strip():
        raise InputError(f"reason must be a non-empty str, got {reason!r}", field="reason")
    check_text_id(reason, "reason")


def check_plan_times(decision_id: str, time: Time, maturity: Time, clock: Time | None) -> None:
    """A plan's id and times: a non-empty id, times the state can hold, ``time`` not before the engine's
    ``clock`` and ``maturity`` not before ``time``."""
    if not isinstance(decision_id, str) or not decision_id:
        raise InputError(f"decision_id must be a non-empty str, got {decision_id!r}", field="decision_id")
    check_text_id(decision_id, "decision_id")
    encode_time(time)
    encode_time(maturity, "maturity")
    if clock is not None and not later_or_equal(time, clock, "time"):
        raise TimeOrderError(f"time {shown(time)} is before the engine's clock {shown(clock)}", field="time")
    if not later_or_equal(maturity, time, "maturity"):
        raise InputError(f"maturity {shown(maturity)} must not be before time {shown(time)}", field="maturity")


def settled_at_or_after(decision_id: str, plan: Plan, at: Time | None) -> Time:
    """When the outcome is known (default the maturity): never before the maturity."""
    settled_at = plan.maturity if at is None else at
    encode_time(settled_at, "at")
    if not later_or_equal(settled_at, plan.maturity, "at"):
        message = (
            f"decision {decision_id!r} matures at {shown(plan.maturity)}; it cannot be settled at {shown(settled_at)}"
        )
        raise PrematureSettlementError(message, field="at")
    return settled_at


#: the most assets a plan's universe may count when given as a number (each decision keeps a few arrays of
#: that length; a count of 10**9 given by mistake would take the machine's memory)
MAX_ASSETS = 1_000_000


def universe_arrays(
    investor: Investor | None,
    reference: ArrayLike | None,
    previous: ArrayLike | None,
    n_assets: int | None,
    risky: ArrayLike | None,
    defensive: ArrayLike | None,
) -> Universe:
    """A portfolio plan's (reference, previous, risky, defensive), checked; with asset groups the
    reference is projected onto the investor's mandate like every draft (it is played, alone or mixed)."""
    if reference is None and n_assets is None:
        raise InputError("give reference weights or n_assets", field="reference")
    if n_assets is not None and (
        isinstance(n_assets, bool) or not isinstance(n_assets, int | np.integer) or not 1 <= n_assets <= MAX_ASSETS
    ):
        raise InputError(
            f"n_assets must be an integer in [1, {MAX_ASSETS:,}] (the number of assets), got {n_assets!r}",
            field="n_assets",
        )
    given_weights = {
        name: _weight_vector(given, name) for name, given in (("reference", reference), ("previous", previous))
    }
    size = given_weights["reference"].size if given_weights["reference"] is not None else int(n_assets)  # type: ignore[arg-type]
    if n_assets is not None and n_assets != size:
        raise InputError(f"n_assets is {n_assets} but reference has {size} weights", field="n_assets")
    equal = np.full(size, 1.0 / size) if size > 0 else np.zeros(0)
    weights = {}
    for name, vector in given_weights.items():
        vector = equal if vector is None else vector
        check_weights(vector[None, :], size, name)
        weights[name] = vector
    if (risky is None) != (defensive is None):
        raise InputError("give both risky and defensive asset groups, or neither", field="risky")
    if risky is None:
        return weights["reference"], weights["previous"], None, None
    if investor is None:
        raise ConfigError("asset groups need an engine investor to project drafts onto", field="investor")
    assert defensive is not None  # given with risky (checked above)
    risky_mask = _asset_mask(risky, size, "risky")
    defensive_mask = _asset_mask(defensive, size, "defensive")
    project(equal, risky_mask, defensive_mask, investor)
    weights["reference"] = project(weights["reference"], risky_mask, defensive_mask, investor)
    return weights["reference"], weights["previous"], risky_mask, defensive_mask


def rows_of(matrix: np.ndarray) -> str:
    """What an array given for rows was, in words (never a NumPy shape): ``7 rows``, ``a flat list of 8
    numbers``, ``a single number``, ``an array of 3 dimensions``."""
    if matrix.ndim == 2:
        return f"{matrix.shape[0]} row{'s' if matrix.shape[0] != 1 else ''}"
    if matrix.ndim == 1:
        return f"a flat list of {matrix.shape[0]} numbers, not rows"
    return "a single number" if matrix.ndim == 0 else f"an array of {matrix.ndim} dimensions"


def float_array(value: Any, field: str, rule: str, *, name: str | None = None) -> NDArray[np.float64]:
    """``value`` as a float array of its own, or an InputError naming ``field`` (the message names the argument ``name``,
    default ``field``) with the ``rule`` it broke: texts, true/false, ragged rows and the like are no numbers."""
    if text_or_flag(value):
        given = f"{name or field} must be {rule}, got {value!r}"[:250]
        raise InputError(f"{given} (texts and true/false are no numbers)", field=field)
    try:
        return np.array(value, dtype=np.float64)  # a copy: a caller reusing its buffer changes nothing kept
    except (TypeError, ValueError):
        raise InputError(f"{name or field} must be {rule}, got {value!r}"[:300], field=field) from None


def _weight_vector(given: ArrayLike | None, field: str) -> NDArray[np.float64] | None:
    """One weight per asset, as a 1-D float array (a nested list read as one row was stored as a plan the
    engine could then not write)."""
    if given is None:
        return None
    vector = float_array(given, field, "one weight per asset")
    if vector.ndim != 1 or vector.size == 0:
        raise InputError(
            f"{field} must be one weight per asset (a non-empty flat list of numbers), got shape {vector.shape}",
            field=field,
        )
    return vector


def _asset_mask(given: ArrayLike, size: int, field: str) -> NDArray[np.bool_]:
    """An asset group: one flag per asset (True/False or 1/0), not numbers read as flags."""
    values = np.asarray(given)
    if values.shape != (size,) or not (values.dtype == bool or np.isin(values, (0, 1)).all()):
        raise InputError(
            f"{field} must be one flag per asset ({size}: true/false or 1/0), got {given!r}"[:300], field=field
        )
    return values.astype(bool)


def check_scored_design(kind: DecisionKind, design: DesignKind, masks: Sequence[int]) -> None:
    """A scored decision's reference is its memory-free draft (mask 0): refuse a design that does not draft
    it (the odd half, the saturated design), naming ``design``."""
    if kind is DecisionKind.SCORED and 0 not in masks:
        raise ConfigError(
            f"design: a scored decision's reference is its memory-free draft, which the {design.value} design does not draft; use design {SCORED_DESIGN.value!r} or 'full'",
            field="design",
        )


def check_scored(plan: Plan, utilities: ArrayLike | None, rule: str | None) -> NDArray[np.float64] | None:
    """A scored settlement's utilities (one finite number per draft), or None with a mixable rule."""
    if (utilities is None) == (rule is None):
        raise InputError("give exactly one of utilities or an outcome with its rule", field="utilities")
    if utilities is None:
        if not scoring_rule(parse_choice(Rule, rule, "rule", argument=True)).mixable:
            message = f"rule {rule!r} scores answers the engine does not hold: score them (memtrial.outcomes.scoring.score) and give utilities"
            raise InputError(message, field="rule")
        return None
    given = float_array(utilities, "utilities", f"{len(plan.masks)} finite numbers, one per draft")
    if given.shape != (len(plan.masks),) or not np.all(np.isfinite(given)):
        if given.ndim != 1:
            got = "a single number" if given.ndim == 0 else f"rows of numbers ({rows_of(given)})"
        else:
            got = f"{given.shape[0]} numbers" if given.shape[0] != len(plan.masks) else "a number that is not finite"
        message = f"utilities must be {len(plan.masks)} finite numbers, one per draft, got {got}"
        raise InputError(message, field="utilities")
    check_utility_range(given, "utilities")
    return given


def check_utility_range(utilities: NDArray[np.float64], field: str) -> None:
    """Utilities within +-:data:`MAX_UTILITY` (finite ones already): an InputError naming ``field`` otherwise."""
    largest = float(np.max(np.abs(utilities), initial=0.0))
    if largest > MAX_UTILITY:
        raise InputError(
            f"{field} must be at most {MAX_UTILITY:g} in absolute value (the engine squares their differences), "
            f"got {largest:g}",
            field=field,
        )


def same_scored(settlement: Settlement, utilities: NDArray[np.float64] | None, outcome: Any, rule: str | None) -> bool:
    """Whether a scored settlement already holds this outcome (settling it again is a no-op)."""
    same_utilities = utilities is None or np.array_equal(settlement.draft_utilities, utilities)
    return settlement.rule == rule and settlement.outcome == outcome and same_utilities
