"""Investor mandates, projection onto them, and settlement into utility.

Settlement (method 4.2). Let ``rel[h, i]`` be asset i's close h sessions after
entry divided by its entry close (h = 1..H). For weights w and the previous
book ``w_prev``:

    fee    = fee_bp / 1e4 * sum_i |w_i - w_prev_i|        (charged once at entry)
    path_h = (1 - fee) * sum_i w_i * rel[h, i],  path_0 = 1
    r_h    = path_h / path_{h-1} - 1                     (r_1 includes the fee)
    J      = path_H - 1
    U      = J - (gamma / 2) * H * var(r_1..r_H)         (ddof = 0), H > 1
    U      = r - (gamma / 2) * r**2,  r = path_1 - 1      H = 1

U is in decimal units; multiply by 100 for percentage points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.errors import ConfigError, InfeasibleMandateError, InputError

__all__ = [
    "INVESTORS",
    "Investor",
    "check_weights",
    "mandate_violation",
    "nav_paths",
    "nav_paths_by_date",
    "normalised",
    "project",
    "project_simplex",
    "relative_prices",
    "mixture_utilities",
    "mixture_utilities_by_date",
    "utilities_by_date",
    "utility",
]

WEIGHT_SUM_TOLERANCE = 1e-6
#: the largest close relative to the entry close a utility is computed from (its squared return stays finite)
MAX_RELATIVE_PRICE = 1e50
FEASIBILITY_TOLERANCE = 1e-12


@dataclass(frozen=True, slots=True)
class Investor:
    """An investor profile.

    risky_cap: most total weight on risky assets (equities, crypto, real estate).
    defensive_floor: least total weight on defensive assets (bonds, cash).
    gamma: risk aversion of the utility.
    """

    name: str
    risky_cap: float
    defensive_floor: float
    gamma: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.risky_cap <= 1.0:
            raise ConfigError(f"risky_cap must be in [0, 1], got {self.risky_cap!r}", field="risky_cap")
        if not 0.0 <= self.defensive_floor <= 1.0:
            raise ConfigError(
                f"defensive_floor must be in [0, 1], got {self.defensive_floor!r}", field="defensive_floor"
            )
        if not (np.isfinite(self.gamma) and self.gamma >= 0.0):
            raise ConfigError(f"gamma must be finite and >= 0, got {self.gamma!r}", field="gamma")


INVESTORS: dict[str, Investor] = {
    "conservative": Investor("conservative", risky_cap=0.40, defensive_floor=0.40, gamma=10.0),
    "balanced": Investor("balanced", risky_cap=0.65, defensive_floor=0.20, gamma=5.0),
    "aggressive": Investor("aggressive", risky_cap=0.90, defensive_floor=0.05, gamma=2.0),
}


def _as_weight_batch(weights: ArrayLike, name: str) -> tuple[NDArray[np.float64], bool]:
    """Weights as (b, n) plus whether the input was a single vector."""
    array = np.asarray(weights, dtype=np.float64)
    if array.ndim not in (1, 2) or array.shape[-1] == 0:
        raise InputError(f"{name} must have shape (n,) or (b, n) with n >= 1, got {array.shape}", field=name)
    if not np.all(np.isfinite(array)):
        raise InputError(f"{name} must be finite (no NaN or inf)", field=name)
    return np.atleast_2d(array), array.ndim == 1


def normalised(weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """Weight vectors (..., n) scaled to sum to 1 (drafts that sum to 1 within the tolerance, exactly)."""
    return np.asarray(weights / weights.sum(axis=-1, keepdims=True), dtype=np.float64)


def project_simplex(points: NDArray[np.float64], total: float) -> NDArray[np.float64]:
    """Euclidean projection of each row of ``points`` onto {w >= 0, sum w = total}.

    Exact (sort-based); ``points`` has shape (b, p) with p >= 1, ``total`` >= 0.
    """
    if total <= 0.0:
        return np.zeros_like(points)
    ordered = -np.sort(-points, axis=1)
    cumulative = np.cumsum(ordered, axis=1) - total
    index = np.arange(1, points.shape[1] + 1)
    support = ordered - cumulative / index > 0
    rho = points.shape[1] - 1 - np.argmax(support[:, ::-1], axis=1)
    theta = cumulative[np.arange(points.shape[0]), rho] / (rho + 1)
    return np.asarray(np.maximum(points - theta[:, None], 0.0), dtype=np.float64)


def _check_groups(n_assets: int, risky: ArrayLike, defensive: ArrayLike) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    risky_mask = np.asarray(risky, dtype=bool)
    defensive_mask = np.asarray(defensive, dtype=bool)
    for name, mask in (("risky", risky_mask), ("defensive", defensive_mask)):
        if mask.shape != (n_assets,):
            raise InputError(f"{name} must be a boolean mask of shape ({n_assets},), got {mask.shape}", field=name)
    overlap = np.flatnonzero(risky_mask & defensive_mask)
    if overlap.size:
        raise InputError(
            f"an asset cannot be both risky and defensive, got both at indices {overlap.tolist()}", field="defensive"
        )
    return risky_mask, defensive_mask


def check_weights(matrix: NDArray[np.float64], n_assets: int, name: str) -> None:
    """Rows of long-only weights over ``n_assets`` assets, each summing to 1 within 1e-6 (InputError naming ``name``)."""
    if n_assets < 1:
        raise InputError(f"n_assets must be >= 1, got {n_assets}", field="n_assets")
    if matrix.ndim != 2 or matrix.shape[1] != n_assets:
        raise InputError(f"{name} must have {n_assets} weights per row, got shape {matrix.shape}", field=name)
    if not np.all(np.isfinite(matrix)):
        raise InputError(f"{name} must be finite (no NaN or inf)", field=name)
    if np.any(matrix < 0):
        raise InputError(f"{name} must be >= 0 (long only)", field=name)
    sums = matrix.sum(axis=1)
    if np.any(np.abs(sums - 1.0) > WEIGHT_SUM_TOLERANCE):
        raise InputError(f"{name} rows must sum to 1, got sums {[round(float(s), 9) for s in sums]}", field=name)


def mandate_violation(
    weights: ArrayLike, risky: ArrayLike, defensive: ArrayLike, investor: Investor, tolerance: float = 1e-6
) -> str | None:
    """Why ``weights`` (n,) break the investor's mandate (the bound and the total), or None when they keep it."""
    vector = np.asarray(weights, dtype=np.float64)
    risky_total = float(vector[np.asarray(risky, dtype=bool)].sum())
    defensive_total = float(vector[np.asarray(defensive, dtype=bool)].sum())
    if risky_total > investor.risky_cap + tolerance:
        return (
            f"puts {risky_total:.6g} on risky assets; the {investor.name} mandate allows at most {investor.risky_cap}"
        )
    if defensive_total < investor.defensive_floor - tolerance:
        return f"puts {defensive_total:.6g} on defensive assets; the {investor.name} mandate needs at least {investor.defensive_floor}"
    return None


def project(weights: ArrayLike, risky: ArrayLike, defensive: ArrayLike, investor: Investor) -> NDArray[np.float64]:
    """Euclidean projection onto the investor's mandate.

    The mandate is {w >= 0, sum w = 1, sum_risky w <= risky_cap,
    sum_defensive w >= defensive_floor}. ``weights`` is (n,) or (b, n);
    ``risky`` and ``defensive`` are disjoint boolean masks of shape (n,).

    Exact: the optimum solves the problem with its active constraints as
    equalities and the others dropped, and that problem splits into
    independent simplex projections of the asset groups. Among the candidates
    of the four possible active sets, the feasible one closest to the input
    is the projection.
    """
    batch, single = _as_weight_batch(weights, "weights")
    risky_mask, defensive_mask = _check_groups(batch.shape[1], risky, defensive)
    other_mask = ~(risky_mask | defensive_mask)
    cap, floor = investor.risky_cap, investor.defensive_floor

    def solve(groups: list[tuple[NDArray[np.bool_], float]]) -> NDArray[np.float64] | None:
        candidate = np.zeros_like(batch)
        for mask, total in groups:
            if not mask.any():
                if total > FEASIBILITY_TOLERANCE:
                    return None
                continue
            candidate[:, mask] = project_simplex(batch[:, mask], total)
        return candidate

    rest_of_risky = defensive_mask | other_mask
    rest_of_defensive = risky_mask | other_mask
    candidates = [
        solve([(np.ones_like(risky_mask), 1.0)]),
        solve([(risky_mask, cap), (rest_of_risky, 1.0 - cap)]),
        solve([(defensive_mask, floor), (rest_of_defensive, 1.0 - floor)]),
        solve([(risky_mask, cap), (defensive_mask, floor), (other_mask, 1.0 - cap - floor)])
        if cap + floor <= 1.0
        else None,
    ]
    best = np.full(batch.shape[0], np.inf)
    result = np.full_like(batch, np.nan)
    for candidate in candidates:
        if candidate is None:
            continue
        feasible = (candidate[:, risky_mask].sum(axis=1) <= cap + FEASIBILITY_TOLERANCE) & (
            candidate[:, defensive_mask].sum(axis=1) >= floor - FEASIBILITY_TOLERANCE
        )
        distance = np.where(feasible, ((candidate - batch) ** 2).sum(axis=1), np.inf)
        better = distance < best
        best = np.where(better, distance, best)
        result[better] = candidate[better]
    if not np.all(np.isfinite(best)):
        raise InfeasibleMandateError(
            f"no long-only portfolio of this universe satisfies the {investor.name} mandate "
            f"(risky <= {cap}, defensive >= {floor}; {int(risky_mask.sum())} risky, "
            f"{int(defensive_mask.sum())} defensive, {int(other_mask.sum())} other assets)",
            field="universe",
        )
    return result[0] if single else result


def relative_prices(closes: ArrayLike | None = None, *, returns: ArrayLike | None = None) -> NDArray[np.float64]:
    """Prices relative to the entry close, shape (H, n).

    Give either ``closes`` of shape (H + 1, n) whose first row is the entry
    close, or simple per-session ``returns`` of shape (H, n).
    """
    if (closes is None) == (returns is None):
        raise InputError("give exactly one of closes or returns", field="closes")
    if closes is not None:
        array = np.asarray(closes, dtype=np.float64)
        if array.ndim != 2 or array.shape[0] < 2:
            raise InputError(f"closes must have shape (H + 1, n) with H >= 1, got {array.shape}", field="closes")
        if not np.all(np.isfinite(array)) or np.any(array <= 0):
            raise InputError("closes must be finite and > 0", field="closes")
        return np.asarray(array[1:] / array[0], dtype=np.float64)
    array = np.asarray(returns, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] < 1:
        raise InputError(f"returns must have shape (H, n) with H >= 1, got {array.shape}", field="returns")
    if not np.all(np.isfinite(array)) or np.any(array <= -1):
        raise InputError("returns must be finite and > -1", field="returns")
    return np.asarray(np.cumprod(1.0 + array, axis=0), dtype=np.float64)


def _check_settlement(
    weights: ArrayLike, rel_prices: ArrayLike, prev_weights: ArrayLike, fee_bp: float
) -> tuple[NDArray[np.float64], bool, NDArray[np.float64], NDArray[np.float64]]:
    batch, single = _as_weight_batch(weights, "weights")
    if np.any(batch < 0):
        raise InputError("weights must be >= 0 (long only)", field="weights")
    sums = batch.sum(axis=1)
    if np.any(np.abs(sums - 1.0) > WEIGHT_SUM_TOLERANCE):
        worst = float(sums[np.argmax(np.abs(sums - 1.0))])
        raise InputError(f"weights must sum to 1 (fully invested), got a row summing to {worst!r}", field="weights")
    rel = np.asarray(rel_prices, dtype=np.float64)
    if rel.ndim != 2 or rel.shape[0] < 1 or rel.shape[1] != batch.shape[1]:
        raise InputError(
            f"rel_prices must have shape (H, {batch.shape[1]}) with H >= 1, got {rel.shape}", field="rel_prices"
        )
    if not np.all(np.isfinite(rel)) or np.any(rel <= 0):
        raise InputError("rel_prices must be finite and > 0", field="rel_prices")
    if np.any(rel > MAX_RELATIVE_PRICE):  # its returns' squares would overflow the utility's variance
        raise InputError(
            f"rel_prices must be at most {MAX_RELATIVE_PRICE:g} (a close that many times the entry close), got {float(rel.max())!r}",
            field="rel_prices",
        )
    previous = np.asarray(prev_weights, dtype=np.float64)
    if previous.shape != (batch.shape[1],) or not np.all(np.isfinite(previous)):
        raise InputError(f"prev_weights must be finite with shape ({batch.shape[1]},)", field="prev_weights")
    if not (np.isfinite(fee_bp) and fee_bp >= 0):
        raise InputError(f"fee_bp must be finite and >= 0, got {fee_bp!r}", field="fee_bp")
    return batch, single, rel, previous


def _growth(weights: NDArray[np.float64], rel_prices: NDArray[np.float64]) -> NDArray[np.float64]:
    """Buy-and-hold growth before fees, weights (D, b, n) and rel_prices (D, H, n) -> (D, b, H): the
    assets added one after another, so a row's path does not depend on the batch it is in."""
    growth = weights[:, :, None, 0] * rel_prices[:, None, :, 0]
    for asset in range(1, weights.shape[2]):
        growth += weights[:, :, None, asset] * rel_prices[:, None, :, asset]
    return growth


def nav_paths(
    weights: ArrayLike, rel_prices: ArrayLike, prev_weights: ArrayLike, fee_bp: float = 15.0
) -> NDArray[np.float64]:
    """NAV paths ``path_1..path_H`` after the entry fee, shape (b, H) or (H,)."""
    batch, single, rel, previous = _check_settlement(weights, rel_prices, prev_weights, fee_bp)
    fee = fee_bp / 1e4 * np.abs(batch - previous).sum(axis=1)
    paths = (1.0 - fee)[:, None] * _growth(batch[None], rel[None])[0]
    return np.asarray(paths[0] if single else paths, dtype=np.float64)


def _utility_of_paths(paths: NDArray[np.float64], gamma: float) -> NDArray[np.float64]:
    """U = J - (gamma / 2) Var of each row of NAV paths (b, H) (method 4.2).

    The sessions run along the leading axis of an (H, b) array, so every sum adds them one after
    another and a row's utility does not depend on the batch it is in."""
    horizon = paths.shape[1]
    steps = np.ascontiguousarray(paths.T)  # (H, b)
    returns = np.empty_like(steps)
    returns[0] = steps[0] - 1.0
    np.divide(steps[1:], steps[:-1], out=returns[1:])
    returns[1:] -= 1.0
    if horizon == 1:
        return np.asarray(returns[0] - 0.5 * gamma * returns[0] ** 2, dtype=np.float64)
    returns -= returns.sum(axis=0) / horizon
    np.multiply(returns, returns, out=returns)
    return np.asarray((paths[:, -1] - 1.0) - 0.5 * gamma * horizon * (returns.sum(axis=0) / horizon), dtype=np.float64)


def mixture_utilities(
    reference: ArrayLike,
    other: ArrayLike,
    rel_prices: ArrayLike,
    prev_weights: ArrayLike,
    gamma: float,
    fee_bp: float = 15.0,
    grid: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """Utility of every mixture ``q * reference + (1 - q) * other`` for q on ``grid`` (default the
    fallback's 201 points), shape (len(grid),).

    A mixture's NAV before fees is linear in q, ``q * (reference . rel_h) + (1 - q) * (other . rel_h)``,
    so the whole family costs O(len(grid) * (H + n)), not O(len(grid) * H * n).
    """
    if not (np.isfinite(gamma) and gamma >= 0):
        raise InputError(f"gamma must be finite and >= 0, got {gamma!r}", field="gamma")
    pair, _, rel, previous = _check_settlement(
        np.vstack([np.asarray(reference, dtype=np.float64), np.asarray(other, dtype=np.float64)]),
        rel_prices,
        prev_weights,
        fee_bp,
    )
    return np.asarray(
        mixture_utilities_by_date(pair[None, 0], pair[None, 1], rel[None], previous[None], gamma, fee_bp, grid)[0],
        dtype=np.float64,
    )


_BLOCK_ELEMENTS = 1 << 16  # (H, dates, G) blocks of about 512 KB


def mixture_utilities_by_date(
    reference: NDArray[np.float64],
    other: NDArray[np.float64],
    rel_prices: NDArray[np.float64],
    prev_weights: NDArray[np.float64],
    gamma: float,
    fee_bp: float = 15.0,
    grid: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """:func:`mixture_utilities` of D dates at once: reference, other, prev_weights (D, n);
    rel_prices (D, H, n); returns (D, len(grid)), each date exactly as alone (inputs unchecked)."""
    q = np.linspace(0.0, 1.0, 201) if grid is None else np.asarray(grid, dtype=np.float64)
    growth_reference = _growth(reference[:, None, :], rel_prices)[:, 0]  # (D, H)
    growth_other = _growth(other[:, None, :], rel_prices)[:, 0]
    dates, horizon = growth_other.shape
    # The arithmetic runs on (D, G) slabs and on (H, dates, G) blocks of a few dates that stay in
    # cache, in place; sums over assets and over sessions add one term after another, so a date's
    # numbers do not depend on the batch it is in.
    distance = np.zeros((dates, q.size))  # sum over assets of |w(q) - previous|
    for asset in range(reference.shape[1]):
        change = q[None, :] * reference[:, asset, None]
        change += (1.0 - q)[None, :] * other[:, asset, None]
        change -= prev_weights[:, asset, None]
        distance += np.abs(change, out=change)
    keep = 1.0 - fee_bp / 1e4 * distance  # (D, G): what the entry fee leaves
    # the NAV before fees is linear in q; the fee scales a whole path, so it changes the first return only
    slope = np.ascontiguousarray((growth_reference - growth_other).T)  # (H, D)
    start = np.ascontiguousarray(growth_other.T)
    out = np.empty((dates, q.size))
    block = max(1, _BLOCK_ELEMENTS // max(1, horizon * q.size))
    for first in range(0, dates, block):
        rows = slice(first, min(first + block, dates))
        paths = q[None, None, :] * slope[:, rows, None]  # (H, dates, G)
        paths += start[:, rows, None]
        growth = np.empty_like(paths)  # each session's growth factor, 1 + its return
        np.divide(paths[1:], paths[:-1], out=growth[1:])
        np.multiply(keep[rows], paths[0], out=growth[0])
        if horizon == 1:  # one return: U = r - (gamma / 2) r^2, as for a single path
            first = growth[0] - 1.0
            out[rows] = first - 0.5 * gamma * first**2
            continue
        final = keep[rows] * paths[-1]
        growth -= growth.sum(axis=0) / horizon  # the returns' deviations from their mean
        np.multiply(growth, growth, out=growth)
        out[rows] = final - 1.0 - 0.5 * gamma * horizon * (growth.sum(axis=0) / horizon)
    return out


def nav_paths_by_date(
    weights: NDArray[np.float64],
    rel_prices: NDArray[np.float64],
    prev_weights: NDArray[np.float64],
    fee_bp: float = 15.0,
) -> NDArray[np.float64]:
    """:func:`nav_paths` of D dates at once: weights (D, b, n), rel_prices (D, H, n), prev_weights (D, n);
    returns (D, b, H), each row exactly as alone (inputs unchecked)."""
    fee = fee_bp / 1e4 * np.abs(weights - prev_weights[:, None, :]).sum(axis=2)
    return np.asarray((1.0 - fee)[:, :, None] * _growth(weights, rel_prices), dtype=np.float64)


def utilities_by_date(
    weights: NDArray[np.float64],
    rel_prices: NDArray[np.float64],
    prev_weights: NDArray[np.float64],
    gamma: float,
    fee_bp: float = 15.0,
) -> NDArray[np.float64]:
    """:func:`utility` of D dates at once: weights (D, b, n), rel_prices (D, H, n), prev_weights (D, n);
    returns (D, b), each row exactly as alone (inputs unchecked)."""
    paths = nav_paths_by_date(weights, rel_prices, prev_weights, fee_bp)
    dates, rows, horizon = paths.shape
    return _utility_of_paths(paths.reshape(dates * rows, horizon), float(gamma)).reshape(dates, rows)


def utility(
    weights: ArrayLike,
    rel_prices: ArrayLike,
    prev_weights: ArrayLike,
    gamma: float,
    fee_bp: float = 15.0,
) -> float | NDArray[np.float64]:
    """Mean-variance utility of buy-and-hold weights over one price path (decimal units).

    weights: (n,) or (b, n), long only, each row summing to 1.
    rel_prices: (H, n) closes relative to the entry close.
    prev_weights: (n,) the book before entry (fees are charged on the change).
    Returns a float for (n,) weights, else an array of shape (b,).
    """
    if not (np.isfinite(gamma) and gamma >= 0):
        raise InputError(f"gamma must be finite and >= 0, got {gamma!r}", field="gamma")
    result = _utility_of_paths(np.atleast_2d(nav_paths(weights, rel_prices, prev_weights, fee_bp)), float(gamma))
    if np.asarray(weights).ndim == 1:
        return float(result[0])
    return np.asarray(result, dtype=np.float64)
