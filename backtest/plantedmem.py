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

A method may also retrieve by itself (value-aware retrieval, method 4.12): every
context offers every available experience with its retrieval score
(``candidates``, ``candidate_scores``) and ``draft_for(retrieved)`` gives the
drafts of every mask of any retrieval. For that every experience has a pointer
on every date, drawn up front (``pointer_all``): in the seven regimes above the
retrieved ones' pointers are those drawn above and the others' come from a
sixth stream of their own, so those worlds are unchanged bit for bit; mask m of
any retrieval drafts on base m of the date (the top four's bases, then the wider
retrieval's), so the similarity top four's drafts are the ones above.

Two regimes test curation (method 4.12-4.14; they are not among ``REGIMES``, the
paper's seven, but in ``CURATION_REGIMES``), each drawing every experience's
pointer on every date from its pointer stream up front:

- ``poisoned``: as ``many_experiences`` (M = 48, beta = 0.25), plus 4 poisoned
  experiences that arrive at the 40th decision (position ``event`` = 39): each
  points at the class with the lowest return over the hold with probability
  0.9 (else a random class), and its retrieval score is
  ``[home == regime(t)] + 1.0 + N(0, 0.5**2)``.
- ``drift``: as ``beta_0.25`` (M = 12), but from the 60th decision (``event`` = 59)
  every useful experience is misleading and every misleading one useful.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from backtest.market import Market
from memtrial.errors import ConfigError

__all__ = [
    "ALL_REGIMES",
    "CURATION_REGIMES",
    "HISTORY",
    "HORIZON",
    "K",
    "REGIMES",
    "UNSCORED",
    "DateContext",
    "PlantedMemWorld",
    "Regime",
]

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
    poisoned: int = 0  # experiences written to be retrieved and to mislead, arriving at ``event``
    drift: bool = False  # useful and misleading experiences swap at ``event``
    event: int | None = None  # the position of the injection or the drift (None: no event)


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
POISON_BOOST = 1.0  # a poisoned experience's extra retrieval score
POISON_ACCURACY = 0.9  # the probability a poisoned experience points at the worst class
ACCURACY = 0.7  # the probability a useful or misleading experience points at its target
CURATION_REGIMES: dict[str, Regime] = {
    r.name: r
    for r in (
        Regime("poisoned", 0.25, 48, 0.0, stream=2, poisoned=4, event=39),
        Regime("drift", 0.25, 12, 0.0, stream=3, drift=True, event=59),
    )
}
ALL_REGIMES: dict[str, Regime] = {**REGIMES, **CURATION_REGIMES}


def _point(
    kind: NDArray[np.int_],
    informed: NDArray[np.bool_],
    random_class: NDArray[np.int_],
    best: NDArray[np.int_],
    worst: NDArray[np.int_],
) -> NDArray[np.int_]:
    """(dates, slots): the class each experience points at, by its type: an informed useful one at the
    date's best class, an informed misleading one at its worst, any other at its random class."""
    target = np.where(kind > 0, best[:, None], np.where(kind < 0, worst[:, None], random_class))
    return np.asarray(np.where((kind != 0) & informed, target, random_class))


@functools.lru_cache(maxsize=16)
def _member_shares(k: int) -> NDArray[np.float64]:
    """(k, 2**k): experience j's share of mask m's pointer, 1 / |m| when j is in m (masks with none: 0)."""
    bits = (np.arange(1 << k)[:, None] >> np.arange(k)[None, :]) & 1  # (2**k, k)
    members = np.maximum(bits.sum(axis=1), 1)
    shares = np.array([bits[:, j] / members for j in range(k)]).reshape(k, 1 << k)
    shares.setflags(write=False)
    return shares


class PlantedMemWorld:
    n_components = None  # content features are given (8-d), not learned from embeddings
    setting = None  # a synthetic world: no real data behind it
    mandate_projection = None  # weights are projected by the runner's default rule
    reference_calls = 8  # the reference is the mean of eight fresh memory-free drafts

    def __init__(self, market: Market, regime: Regime | str, seed: int) -> None:
        if isinstance(regime, str):
            if regime not in ALL_REGIMES:
                raise ConfigError(f"regime must be one of {list(ALL_REGIMES)}, got {regime!r}", field="regime")
            regime = ALL_REGIMES[regime]
        self.market, self.regime, self.seed = market, regime, seed
        self.sessions = market.decision_sessions(2015, HISTORY, HORIZON)
        n_dates, n_assets, m = len(self.sessions), len(market.assets), regime.n_experiences
        entropy = [seed, regime.stream] if regime.stream else seed
        kinds, retrieval, pointers, drafts, wide, every = (
            np.random.default_rng(s) for s in np.random.SeedSequence(entropy).spawn(6)
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
        growth = np.array([market.levels[s + HORIZON] / market.levels[s] for s in self.sessions])
        best, worst = growth.argmax(axis=1), growth.argmin(axis=1)
        self.n_dates, self.n_assets = n_dates, n_assets
        self.event = regime.event
        self.poisoned = np.arange(m, m + regime.poisoned)  # the poisoned experiences' ids
        self.poison_features = np.zeros((0, N_FEATURES))
        self.type_by_date = np.repeat(self.types[None, :], n_dates, axis=0)
        if regime.poisoned or regime.drift:
            self._curation_world(scores, kinds, retrieval, pointers, best, worst)
        else:
            self._paper_world(scores, pointers, wide, every, best, worst)
        alpha = CONCENTRATION * TYPICAL[:n_assets] / TYPICAL[:n_assets].sum()
        self.base = drafts.dirichlet(alpha, size=(n_dates, 16))
        self.reference_draws = drafts.dirichlet(alpha, size=(n_dates, 8))
        self.consistency_base = drafts.dirichlet(alpha, size=(n_dates, 8))
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
        wide_base = wide.dirichlet(alpha, size=(n_dates, 1 << self.wide))
        self.wide_drafts = self._tilt(wide_base, self._pointers(self.wide_pointer_class))
        self.wide_drafts[:, : 1 << K] = self.drafts
        self.bases = np.concatenate([self.base, wide_base[:, 1 << K :]], axis=1)  # base m of mask m, any retrieval

    def _paper_world(
        self,
        scores: NDArray[np.float64],
        pointers: np.random.Generator,
        wide: np.random.Generator,
        every: np.random.Generator,
        best: NDArray[np.int_],
        worst: NDArray[np.int_],
    ) -> None:
        """The seven regimes' retrieval and pointers (each slot of the top four and of the wider retrieval
        drawn by slot, as the method's paper specifies), and every other experience's pointer on every
        date from a stream of its own (``every``)."""
        n_dates, n_assets, m = self.n_dates, self.n_assets, self.regime.n_experiences
        ranked = np.argsort(-scores, axis=1, kind="stable")
        self.retrieved = ranked[:, :K]
        informed = pointers.random(size=(n_dates, K)) < ACCURACY
        random_class = pointers.integers(0, n_assets, size=(n_dates, K))
        self.pointer_class = _point(self.types[self.retrieved], informed, random_class, best, worst)
        width = self.wide = min(WIDE, m)
        self.wide_retrieved = ranked[:, :width]
        extra = self.types[self.wide_retrieved[:, K:]]
        # the wide stream's first draws are those of the ranks K..WIDE-1 (its Dirichlet bases follow)
        extra_informed = wide.random(size=extra.shape) < ACCURACY
        extra_random = wide.integers(0, n_assets, size=extra.shape)
        self.wide_pointer_class = np.concatenate(
            [self.pointer_class, _point(extra, extra_informed, extra_random, best, worst)], axis=1
        )
        self.pointer_all = self._every_pointer(
            every.random(size=(n_dates, m)), every.integers(0, n_assets, size=(n_dates, m)), best, worst
        )
        rows = np.arange(n_dates)[:, None]
        self.pointer_all[rows, self.wide_retrieved] = self.wide_pointer_class
        self.scores = scores

    def _curation_world(
        self,
        scores: NDArray[np.float64],
        kinds: np.random.Generator,
        retrieval: np.random.Generator,
        pointers: np.random.Generator,
        best: NDArray[np.int_],
        worst: NDArray[np.int_],
    ) -> None:
        """A curation regime: every experience's pointer on every date drawn up front, the poisoned
        experiences appended (absent before ``event``), the drift's swap of types from ``event`` on."""
        regime, n_dates, n_assets = self.regime, self.n_dates, self.n_assets
        event = regime.event if regime.event is not None else n_dates
        if regime.poisoned:
            home = kinds.integers(0, 2, size=regime.poisoned)
            poison_scores = (
                (home[None, :] == self.regime_of_date[:, None])
                + POISON_BOOST
                + retrieval.normal(0.0, 0.5, size=(n_dates, regime.poisoned))
            )
            poison_scores[:event] = -np.inf  # not yet written
            scores = np.concatenate([scores, poison_scores], axis=1)
            self.type_by_date = np.concatenate([self.type_by_date, np.full((n_dates, regime.poisoned), -1)], axis=1)
            self.types = np.concatenate([self.types, np.full(regime.poisoned, -1)])
            self.poison_features = kinds.standard_normal((regime.poisoned, N_FEATURES))
        if regime.drift:
            self.type_by_date[event:] *= -1
        total = scores.shape[1]
        accuracy = np.full(total, ACCURACY)
        accuracy[regime.n_experiences :] = POISON_ACCURACY
        uniform, random_class = pointers.random(size=(n_dates, total)), pointers.integers(0, n_assets, (n_dates, total))
        self.pointer_all = self._every_pointer(uniform, random_class, best, worst, accuracy)
        ranked = np.argsort(-scores, axis=1, kind="stable")
        self.retrieved = ranked[:, :K]
        rows = np.arange(n_dates)[:, None]
        self.pointer_class = self.pointer_all[rows, self.retrieved]
        self.wide = min(WIDE, regime.n_experiences)
        self.wide_retrieved = ranked[:, : self.wide]
        self.wide_pointer_class = self.pointer_all[rows, self.wide_retrieved]
        self.scores = scores

    def _every_pointer(
        self,
        uniform: NDArray[np.float64],
        random_class: NDArray[np.int_],
        best: NDArray[np.int_],
        worst: NDArray[np.int_],
        accuracy: NDArray[np.float64] | float = ACCURACY,
    ) -> NDArray[np.int_]:
        """(dates, experiences): each experience's pointer on each date, by its type on that date."""
        return _point(self.type_by_date, uniform < accuracy, random_class, best, worst)

    def _pointers(self, pointer_class: NDArray[np.int_] | None = None) -> NDArray[np.float64]:
        """(dates, 2**k, n): for each mask, the mean of its members' one-hot pointers (members in retrieval order)."""
        classes = self.pointer_class if pointer_class is None else pointer_class
        k = classes.shape[1]
        onehot = np.eye(self.n_assets)[classes]  # (dates, k, n)
        shares = _member_shares(k)
        pointers = np.zeros((classes.shape[0], 1 << k, self.n_assets))
        for j in range(k):
            pointers += shares[j][None, :, None] * onehot[:, j][:, None, :]
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
        available = np.isfinite(self.scores[date])
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
            added=self._added(date),
            candidates=tuple(int(e) for e in np.flatnonzero(available)),
            candidate_scores=self.scores[date][available],
            draft_for=lambda retrieved, masks=None: self.draft_for(date, retrieved, masks),
        )

    def _added(self, date: int) -> tuple[tuple[int, NDArray[np.float64]], ...]:
        """The poisoned experiences on the date they arrive (every other experience is known from the start)."""
        if not self.regime.poisoned or date != self.event:
            return ()
        return tuple((int(e), self.poison_features[i]) for i, e in enumerate(self.poisoned))

    def draft_for(self, date: int, retrieved: Sequence[int], masks: Sequence[int] | None = None) -> NDArray[np.float64]:
        """(2**k, n): the date's draft of every mask of a retrieval of k experiences (rank order): mask m
        tilts the date's base m by the mean pointer of its members; the similarity top four's (and the
        wider retrieval's) are the drafts above. ``masks``: those masks' drafts only, (len(masks), n), each
        row the one of every mask's."""
        members = np.asarray(retrieved, dtype=np.int64)
        if members.size > self.bases.shape[1].bit_length() - 1:
            raise ConfigError(f"a retrieval holds at most {WIDE} experiences, got {members.size}", field="retrieved")
        classes = self.pointer_all[date, members][None, :]
        if masks is None:
            pointers = self._pointers(classes)
            return np.asarray(self._tilt(self.bases[date : date + 1, : 1 << members.size], pointers)[0])
        rows = np.asarray(masks, dtype=np.int64)
        onehot = np.eye(self.n_assets)[classes]  # (1, k, n)
        shares = _member_shares(members.size)[:, rows]
        pointers = np.zeros((1, rows.size, self.n_assets))
        for j in range(members.size):  # as _pointers adds them, mask by mask
            pointers += shares[j][None, :, None] * onehot[:, j][:, None, :]
        return np.asarray(self._tilt(self.bases[date : date + 1, rows], pointers)[0])

    def outcome(self, date: int) -> NDArray[np.float64]:
        """(20, n) class levels over the hold relative to the decision close."""
        return self.market.relative(self.sessions[date], HORIZON)
