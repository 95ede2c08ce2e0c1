"""An agent's universe: asset order, mandate groups, and weight maps <-> vectors."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.outcomes.mandates import Investor, mandate_violation
from service.errors import ApiError
from service.schemas import DEFENSIVE_CLASSES, RISKY_CLASSES

__all__ = ["SUSPECT_SESSION_RETURN", "Universe"]

SUM_TOLERANCE = 1e-6
#: a session return this large (in absolute value) is accepted but answered with a warning: it is more
#: often a percentage given as a fraction (1.2 meant as 1.2%) than a market move
SUSPECT_SESSION_RETURN = 0.5


class Universe:
    def __init__(self, assets: Sequence[Mapping[str, Any]]) -> None:
        self.assets = [str(a["asset"]) for a in assets]
        self.classes = [str(a["asset_class"]) for a in assets]
        self.risky = np.array([c in RISKY_CLASSES for c in self.classes])
        self.defensive = np.array([c in DEFENSIVE_CLASSES for c in self.classes])

    @property
    def size(self) -> int:
        return len(self.assets)

    def vector(self, weights: Mapping[str, float], field: str) -> NDArray[np.float64]:
        """Weights over the universe; each asset must be named. Unknown or missing assets and bad sums are 422."""
        unknown = sorted(set(weights) - set(self.assets))
        if unknown:
            raise ApiError(422, "invalid", f"{field}: unknown assets {unknown}", field)
        missing = [asset for asset in self.assets if asset not in weights]
        if missing:
            raise ApiError(
                422,
                "invalid",
                f"{field}: missing assets {missing}: give a weight (0 included) for every asset of the universe",
                field,
            )
        vector = np.array([float(weights.get(asset, 0.0)) for asset in self.assets])
        total = float(vector.sum())
        if abs(total - 1.0) > SUM_TOLERANCE:
            raise ApiError(422, "invalid", f"{field}: weights must sum to 1, got {total!r}", field)
        return vector

    def check_mandate(self, vector: NDArray[np.float64], investor: Investor, field: str) -> None:
        """Weights the service would play must keep the agent's mandate: 422 naming the field and the bound."""
        violation = mandate_violation(vector, self.risky, self.defensive, investor)
        if violation is not None:
            raise ApiError(422, "invalid", f"{field}: {violation}", field)

    def mapping(self, vector: Sequence[float] | NDArray[np.float64]) -> dict[str, float]:
        return {asset: float(w) for asset, w in zip(self.assets, vector, strict=True)}

    def suspect_returns(self, series: Mapping[str, Sequence[float]], kind: str) -> list[tuple[str, str]]:
        """(field, message) for each asset with a session return (given, or implied by closes) of at least
        :data:`SUSPECT_SESSION_RETURN` in absolute value: allowed, but likely percentages. ``series`` has
        passed :meth:`relative_prices`."""
        warnings = []
        for asset in self.assets:
            values = np.asarray(series[asset], dtype=np.float64)
            returns = values[1:] / values[:-1] - 1.0 if kind == "prices" else values
            large = np.flatnonzero(np.abs(returns) >= SUSPECT_SESSION_RETURN)
            if large.size:
                session = int(large[0])
                value = float(returns[session])
                shown = "a close-to-close return" if kind == "prices" else "a return"
                warnings.append(
                    (
                        f"{kind}.{asset}",
                        f"{kind}.{asset}: session {session + 1} has {shown} of {value:.6g} ({value:+.4%}): "
                        "returns are fractions (0.012 for +1.2%); if these were percentages, post a correction",
                    )
                )
        return warnings

    def _impossible(self, matrix: NDArray[np.float64], kind: str) -> None:
        """A close <= 0, or a return of -100% or worse: 422 naming the asset and the session."""
        bound = 0.0 if kind == "prices" else -1.0
        if not np.any(matrix <= bound):
            return
        row, column = (int(v) for v in np.argwhere(matrix <= bound)[0])
        field, got = f"{kind}.{self.assets[column]}", float(matrix[row, column])
        if kind == "prices":
            which = "the entry close" if row == 0 else f"the close of session {row}"
            raise ApiError(422, "invalid", f"{field}: closes must be > 0, got {got!r} for {which}", field)
        rule = "returns must be > -1 (a loss of less than all)"
        raise ApiError(422, "invalid", f"{field}: {rule}, got {got!r} for session {row + 1}", field)

    def relative_prices(
        self, series: Mapping[str, Sequence[float]], kind: str, horizon: int | None = None, max_return: float = math.inf
    ) -> NDArray[np.float64]:
        """(H, n) prices relative to entry from closes (H + 1 per asset) or returns (H per asset).

        horizon: the sessions the decision holds (H must equal it); max_return:
        the largest plausible simple return of one session (closes imply theirs).
        """
        unknown = sorted(set(series) - set(self.assets))
        if unknown:
            raise ApiError(422, "invalid", f"{kind}: unknown assets {unknown}", kind)
        missing = [asset for asset in self.assets if asset not in series]
        if missing:
            field = f"{kind}.{missing[0]}" if len(missing) == 1 else kind  # one asset, or the whole mapping
            raise ApiError(422, "invalid", f"{kind}: missing assets {missing}", field)
        lengths = {len(series[asset]) for asset in self.assets}
        if len(lengths) != 1:
            raise ApiError(
                422,
                "invalid",
                f"{kind}: every asset needs the same number of values, got lengths {sorted(lengths)}",
                kind,
            )
        matrix = np.array([series[asset] for asset in self.assets], dtype=np.float64).T
        sessions = matrix.shape[0] - 1 if kind == "prices" else matrix.shape[0]
        if horizon is not None and sessions != horizon:
            expected = (
                f"{horizon + 1} closes (the entry close and one per session)"
                if kind == "prices"
                else f"{horizon} returns (one per session)"
            )
            raise ApiError(
                422,
                "invalid",
                f"{kind}: the decision holds {horizon} sessions: give {expected} per asset, got {matrix.shape[0]}",
                kind,
            )
        if kind == "prices":
            if matrix.shape[0] < 2:
                raise ApiError(
                    422, "invalid", "prices: give the entry close and at least one later close per asset", kind
                )
            self._impossible(matrix, kind)
            returns = matrix[1:] / matrix[:-1] - 1.0
        else:
            if matrix.shape[0] < 1:
                raise ApiError(422, "invalid", "returns: give at least one return per asset", kind)
            self._impossible(matrix, kind)
            returns = matrix
        implausible = np.argwhere(~(returns <= max_return))
        if implausible.size:
            session, column = (int(v) for v in implausible[0])
            asset = self.assets[column]
            shown = "a close-to-close return" if kind == "prices" else "a return"
            raise ApiError(
                422,
                "invalid",
                f"{kind}.{asset}: session {session + 1} has {shown} of {float(returns[session, column])!r}, above the plausible {max_return:g} a session "
                "(MEMTRIAL_MAX_SESSION_RETURN); check the price feed",
                f"{kind}.{asset}",
            )
        if kind == "prices":
            return np.asarray(matrix[1:] / matrix[0], dtype=np.float64)
        relative = np.cumprod(1.0 + matrix, axis=0)
        if not np.all(np.isfinite(relative)):
            raise ApiError(422, "invalid", f"{kind}: the compounded returns overflow", kind)
        return np.asarray(relative, dtype=np.float64)
