"""PlantedMem: a semi-synthetic world where each experience's quality is known (method 5).

Four class indices (equities, bonds, cash, commodities), one decision on the
first session of each month from 2015 with 60 sessions of history and a
20-session hold. M experiences: a quarter useful, half neutral, a quarter
misleading. On each date a useful (misleading) experience points, with
probability 0.7, at the class with the highest (lowest) return over the hold,
otherwise at a random class; a neutral one always points at a random class.
The draft for subset S is ``(1 - beta) * base + beta * mean(pointers of S)``
with a fresh memory-free base draft each time (the empty subset's draft is its
base). Retrieval mimics the market confound: each experience has a home regime,
regime(t) = 1 if equities rose over the last 60 sessions, and the score is
``[home == regime(t)] + N(0, 0.5**2)``; the top 4 are retrieved.
Content features: ``z = kappa * type * e_1 + N(0, I_8)``.

A wider retrieval for a draft budget's saturated design (method 4.11): the top
7 of the same score, the pointers of ranks 5 to 7 drawn as above from a stream
of their own, and every mask of the seven a draft with a fresh base, except
the masks of the top four, whose drafts are the ones above.

Every random draw of a world is made up front from ``SeedSequence(seed)``, so
all methods see the same retrieved experiences, pointers and drafts (common
random numbers) and a world is identical whoever runs it. ``informative_content``
draws from ``SeedSequence([seed, 1])``: otherwise its worlds would repeat
``many_experiences`` for every method that ignores content.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from backtest.market import Market
from memtrial.errors import ConfigError

__all__ = ["HISTORY", "HORIZON", "K", "REGIMES", "UNSCORED", "DateContext", "PlantedMemWorld", "Regime"]

K = 4
WIDE = 7  # the retrieved experiences a saturated design screens (method 4.11)
HISTORY = 60
HORIZON = 20
UNSCORED = 12
TYPICAL = np.array([0.40, 0.30, 0.10, 0.20])
CONCENTRATION = 20.0
N_FEATURES = 8


@dataclass(frozen=True, slots=True)
class Regime:
    name: str
    beta: float
    n_experiences: int
    kappa: float
    all_neutral: bool = False
    stream: int = 0  # > 0: the regime draws its worlds from a random stream of its own


REGIMES: dict[str, Regime] = {
    r.name: r
    for r in (
        Regime("no_influence", 0.0, 12, 0.0),
        Regime("noise_only", 0.5, 12, 0.0, all_neutral=True),
        Regime("beta_0.1", 0.1, 12, 0.0),
        Regime("beta_0.25", 0.25, 12, 0.0),
        Regime("beta_0.5", 0.5, 12, 0.0),
        Regime("many_experiences", 0.25, 48, 0.0),
        Regime("informative_content", 0.25, 48, 1.5, stream=1),
    )
}


class PlantedMemWorld:
    n_components = None  # content features are given (8-d), not learned from embeddings
    setting = None  # a synthetic world: no real data behind it
    mandate_projection = None  # weights are projected by the runner's default rule
    reference_calls = 8  # the reference is the mean of eight fresh memory-free drafts

    def __init__(self, market: Market, regime: Regime | str, seed: int) -> None:
        if isinstance(regime, str):
            if regime not in REGIMES:
                raise ConfigError(f"regime must be one of {list(REGIMES)}, got {regime!r}", field="regime")
            regime = REGIMES[regime]
        self.market, self.regime, self.seed = market, regime, seed
        self.sessions = market.decision_sessions(2015, HISTORY, HORIZON)
        n_dates, n_assets, m = len(self.sessions), len(market.assets), regime.n_experiences
        entropy = [seed, regime.stream] if regime.stream else seed
        kinds, retrieval, pointers, drafts, wide = (
            np.random.default_rng(s) for s in np.random.SeedSequence(entropy).spawn(5)
        )
        quarter = m // 4
        types = np.array([1] * quarter + [0] * (m - 2 * quarter) + [-1] * quarter)
        self.types = np.zeros(m, dtype=int) if regime.all_neutral else kinds.permutation(types)
        self.home = kinds.integers(0, 2, size=m)
        self.features = regime.kappa * self.types[:, None] * np.eye(N_FEATURES)[0] + kinds.standard_normal(
            (m, N_FEATURES)
        )
        equities = market.levels[:, 0]
        self.regime_of_date = np.array([int(equities[s] > equities[s - HISTORY]) for s in self.sessions])
        scores = (self.home[None, :] == self.regime_of_date[:, None]) + retrieval.normal(0.0, 0.5, size=(n_dates, m))
        ranked = np.argsort(-scores, axis=1, kind="stable")
        self.retrieved = ranked[:, :K]
        growth = np.array([market.levels[s + HORIZON] / market.levels[s] for s in self.sessions])
        best, worst = growth.argmax(axis=1), growth.argmin(axis=1)
        informed = pointers.random(size=(n_dates, K)) < 0.7
        random_class = pointers.integers(0, n_assets, size=(n_dates, K))
        kinds_retrieved = self.types[self.retrieved]
        target = np.where(
            kinds_retrieved > 0, best[:, None], np.where(kinds_retrieved < 0, worst[:, None], random_class)
        )
        self.pointer_class = np.where((kinds_retrieved != 0) & informed, target, random_class)
        alpha = CONCENTRATION * TYPICAL[:n_assets] / TYPICAL[:n_assets].sum()
        self.base = drafts.dirichlet(alpha, size=(n_dates, 16))
        self.reference_draws = drafts.dirichlet(alpha, size=(n_dates, 8))
        self.consistency_base = drafts.dirichlet(alpha, size=(n_dates, 8))
        self.n_dates, self.n_assets = n_dates, n_assets
        self.equal = np.full(n_assets, 1.0 / n_assets)
        # every date's sixteen designed drafts and self-consistency mean, built at once
        pointer_means = self._pointers()
        self.drafts = self._tilt(self.base, pointer_means)
        self.consistency = self._tilt(
            self.consistency_base, np.repeat(pointer_means[:, [0b0011]], self.consistency_base.shape[1], axis=1)
        ).mean(axis=1)
        self.reference = self.reference_draws.mean(axis=1)
        # the wider retrieval of a saturated design: ranks K..WIDE-1 from a stream of their own, so the
        # top K, their pointers and drafts are those above; every other mask of the WIDE gets a fresh base
        width = self.wide = min(WIDE, m)
        self.wide_retrieved = ranked[:, :width]
        extra = self.types[self.wide_retrieved[:, K:]]
        extra_informed = wide.random(size=extra.shape) < 0.7
        extra_random = wide.integers(0, n_assets, size=extra.shape)
        extra_target = np.where(extra > 0, best[:, None], np.where(extra < 0, worst[:, None], extra_random))
        self.wide_pointer_class = wide_class = np.concatenate(
            [self.pointer_class, np.where((extra != 0) & extra_informed, extra_target, extra_random)], axis=1
        )
        wide_base = wide.dirichlet(alpha, size=(n_dates, 1 << width))
        self.wide_drafts = self._tilt(wide_base, self._pointers(wide_class))
        self.wide_drafts[:, : 1 << K] = self.drafts

    def _pointers(self, pointer_class: NDArray[np.int_] | None = None) -> NDArray[np.float64]:
        """(dates, 2**k, n): for each mask, the mean of its members' one-hot pointers (members in retrieval order)."""
        classes = self.pointer_class if pointer_class is None else pointer_class
        k = classes.shape[1]
        onehot = np.eye(self.n_assets)[classes]  # (dates, k, n)
        bits = (np.arange(1 << k)[:, None] >> np.arange(k)[None, :]) & 1  # (2**k, k)
        members = np.maximum(bits.sum(axis=1), 1)
        pointers = np.zeros((self.n_dates, 1 << k, self.n_assets))
        for j in range(k):
            pointers += (bits[:, j] / members)[None, :, None] * onehot[:, j][:, None, :]
        return pointers

    def _tilt(self, base: NDArray[np.float64], pointers: NDArray[np.float64]) -> NDArray[np.float64]:
        """(1 - beta) * base + beta * pointer for every subset with members; the empty subset keeps its base."""
        tilted = (1.0 - self.regime.beta) * base + self.regime.beta * pointers
        empty = np.all(pointers == 0.0, axis=2, keepdims=True)
        return np.where(empty, base, tilted)

    @property
    def presented(self) -> int:
        """Every date is presented."""
        return self.n_dates

    def context(self, date: int) -> DateContext:
        session = self.sessions[date]
        drafts, consistency = self.drafts[date], self.consistency[date]
        return DateContext(
            index=date,
            session=session,
            maturity=session + HORIZON,
            scored=date >= UNSCORED,
            retrieved=tuple(int(e) for e in self.retrieved[date]),
            drafts=drafts,
            reference=self.reference[date],
            self_consistency=consistency,
            history=self.market.daily_returns(session, HISTORY),
            previous=self.equal,
            equal=self.equal,
            label=self.market.labels[session],
            wide_retrieved=tuple(int(e) for e in self.wide_retrieved[date]),
            wide_drafts=self.wide_drafts[date],
        )

    def outcome(self, date: int) -> NDArray[np.float64]:
        """(20, n) class levels over the hold relative to the decision close."""
        return self.market.relative(self.sessions[date], HORIZON)
