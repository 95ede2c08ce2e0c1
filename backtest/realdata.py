"""The real-data settings (method 5): ClassAlloc, InvestorBench and PortBench-97.

A :class:`Setting` is the market of one benchmark: a session calendar, closes
(NaN before an asset lists), asset classes, the decision sessions of the
warm-up and test windows, the hold and the history a tradable asset needs.
A :class:`RealWorld` runs one (setting, investor, seed, drafter):

- per date, the universe is every asset with a close on each of the
  ``history + 1`` sessions up to the decision; weights are projected onto the
  investor's mandate; the reference (and the previous book, for fees) is
  equal weight over the universe, projected onto the mandate;
- experiences come from the agent's own past: on every date a logging agent
  acts on the memory-free draft, and once that decision matures its lesson
  (text naming the state, what was held and what happened, plus the weights,
  utility and excess over the reference) becomes an experience. Experiences
  are embedded with the offline MiniLM model and retrieved with FAISS (top 4
  by cosine similarity to the date's context text); writing continues through
  the test window as outcomes mature. The bank does not depend on the method
  under test, so every method sees the same experiences and drafts;
- a date is presented to the methods once four experiences have matured
  (earlier warm-up dates only feed the bank, and the report says so).

Nothing is dropped silently: assets outside a date's universe are listed as
exclusions with the reason; an asset in the universe without a close during
its hold is an error naming the ticker and date.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from backtest.context import DateContext
from backtest.data import (
    DataError,
    Exclusion,
    align_to_sessions,
    class_indices,
    load_asset_classes,
    load_crypto_closes,
    load_etf_closes,
    load_investorbench,
    tradable,
)
from memtrial.credit.design import half_fraction
from memtrial.drafting.drafts import Drafter, DraftRequest, Lesson, mandate_text
from memtrial.errors import ConfigError
from memtrial.outcomes.mandates import INVESTORS, nav_paths, project, utility

__all__ = ["SETTINGS", "RealWorld", "Setting", "load_setting"]

SETTINGS = ("classalloc", "investorbench", "portbench")
RISKY = {"equities", "crypto", "real_estate"}
DEFENSIVE = {"bonds", "cash"}
CLASSALLOC_CLASSES = ["equities", "bonds", "commodities", "real_estate", "cash"]
K = 4
CONSISTENCY_SAMPLES = 8
TASKS = {
    "classalloc": "Allocate a portfolio across five asset-class indices for the next month (20 sessions, held without rebalancing).",
    "investorbench": "Allocate a portfolio across four stocks and cash for the next trading session; weigh the day's news and recent returns.",
    "portbench": "Allocate a portfolio across the listed ETFs, stocks and crypto coins for the next month (20 sessions, held without rebalancing).",
}


@dataclass(frozen=True)
class Setting:
    """closes: (sessions, assets), NaN before an asset lists; decisions: decision sessions, warm-up then test."""

    name: str
    dates: pd.DatetimeIndex
    closes: NDArray[np.float64]
    assets: tuple[str, ...]
    classes: tuple[str, ...]
    decisions: tuple[int, ...]
    first_test: int
    horizon: int
    history: int
    periods_per_year: float
    scale_pp: float
    news: dict[str, dict[pd.Timestamp, list[str]]] | None = None
    filings: dict[str, dict[pd.Timestamp, list[str]]] | None = None
    exclusions: tuple[Exclusion, ...] = ()

    @property
    def n_test(self) -> int:
        return len(self.decisions) - self.first_test

    def truncated(self, warmup_dates: int | None, test_dates: int | None) -> Setting:
        """The last ``warmup_dates`` warm-up decisions and the first ``test_dates`` test decisions."""
        warm = list(self.decisions[: self.first_test])
        test = list(self.decisions[self.first_test :])
        if warmup_dates is not None:
            warm = warm[len(warm) - min(warmup_dates, len(warm)) :]
        if test_dates is not None:
            test = test[:test_dates]
        notes = list(self.exclusions)
        shortened = len(warm) < self.first_test or len(test) < self.n_test  # a limit past the calendar cuts nothing
        if shortened:
            notes.append(
                Exclusion(
                    "decision dates", f"run shortened to {len(warm)} warm-up and {len(test)} test dates on request"
                )
            )
        return replace(self, decisions=tuple(warm + test), first_test=len(warm), exclusions=tuple(notes))


def _monthly(dates: pd.DatetimeIndex, start: str, end: str, history: int, horizon: int) -> list[int]:
    frame = pd.Series(np.arange(len(dates)), index=dates)
    firsts = frame.groupby([dates.year, dates.month]).first().to_numpy()
    low, high = pd.Timestamp(start), pd.Timestamp(end)
    return [int(i) for i in firsts if low <= dates[i] <= high and i >= history and i + horizon < len(dates)]


def _split(dates: pd.DatetimeIndex, decisions: list[int], test_start: str) -> int:
    return sum(1 for s in decisions if dates[s] < pd.Timestamp(test_start))


def _universe_exclusions(
    setting_dates: pd.DatetimeIndex,
    closes: NDArray[np.float64],
    assets: Sequence[str],
    decisions: Sequence[int],
    history: int,
) -> list[Exclusion]:
    notes = []
    for j, asset in enumerate(assets):
        missing = [s for s in decisions if not tradable(closes, s, history)[j]]
        if missing:
            notes.append(
                Exclusion(
                    asset,
                    f"not tradable on {len(missing)} of {len(decisions)} decision dates: fewer than {history + 1} consecutive sessions of closes",
                    f"{setting_dates[missing[0]].date()}..{setting_dates[missing[-1]].date()}",
                )
            )
    return notes


@functools.cache
def load_setting(name: str) -> Setting:
    """The setting's market (cached per process)."""
    if name == "classalloc":
        closes = load_etf_closes()
        frame = class_indices(closes, load_asset_classes(), CLASSALLOC_CLASSES)
        dates = pd.DatetimeIndex(frame.index)
        decisions = _monthly(dates, "2015-07-01", "2100-01-01", 126, 20)
        classes = tuple(CLASSALLOC_CLASSES)
        return Setting(
            name,
            dates,
            frame.to_numpy(),
            classes,
            classes,
            tuple(decisions),
            _split(dates, decisions, "2020-05-01"),
            20,
            126,
            12.0,
            0.5,
        )
    if name == "portbench":
        etf = load_etf_closes()
        crypto = align_to_sessions(load_crypto_closes(), pd.DatetimeIndex(etf.index))
        frame = pd.concat([etf, crypto], axis=1)
        asset_classes = load_asset_classes()
        unknown = sorted(set(frame.columns) - set(asset_classes))
        if unknown:
            raise DataError(f"tickers without an asset class: {unknown}", field="data")
        dates = pd.DatetimeIndex(frame.index)
        decisions = _monthly(dates, "2019-08-01", "2024-11-30", 126, 20)
        values = frame.to_numpy(dtype=np.float64)
        assets = tuple(frame.columns)
        notes = _universe_exclusions(dates, values, assets, decisions, 126)
        notes.append(
            Exclusion(
                "crypto closes",
                "calendar-day closes aligned to trading sessions: the last close on or before each session",
            )
        )
        return Setting(
            name, dates, values, assets, tuple(asset_classes[a] for a in assets), tuple(decisions),
            _split(dates, decisions, "2023-01-01"), 20, 126, 12.0, 0.5, exclusions=tuple(notes),
        )  # fmt: skip
    if name == "investorbench":
        data = load_investorbench()
        frame = data.closes.copy()
        frame["CASH"] = 1.0
        dates = pd.DatetimeIndex(frame.index)
        low, high = pd.Timestamp("2020-07-01"), pd.Timestamp("2021-05-06")
        decisions = [i for i in range(len(dates) - 1) if low <= dates[i] <= high and i >= 60]
        assets = tuple(frame.columns)
        classes = tuple("cash" if a == "CASH" else "equities" for a in assets)
        cash_note = (Exclusion("CASH", "cash earns nothing: its close is 1 on every date"),)
        return Setting(
            name, dates, frame.to_numpy(dtype=np.float64), assets, classes, tuple(decisions), _split(dates, decisions, "2020-10-01"),
            1, 60, 252.0, 0.1, data.news, data.filings, cash_note,
        )  # fmt: skip
    raise ConfigError(f"setting must be one of {list(SETTINGS)}, got {name!r}", field="setting")


def _pct(value: float) -> str:
    return f"{100 * value:+.1f}%"


@dataclass
class _Bank:
    """The experiences that have matured so far, with a FAISS inner-product index."""

    dimension: int
    ids: list[int] = field(default_factory=list)
    index: object = None

    def add(self, experience: int, vector: NDArray[np.float32]) -> None:
        import faiss

        if self.index is None:
            self.index = faiss.IndexFlatIP(self.dimension)
        self.index.add(vector.reshape(1, -1))  # type: ignore[attr-defined]
        self.ids.append(experience)

    def search(self, query: NDArray[np.float32], k: int) -> list[int]:
        scores, positions = self.index.search(query.reshape(1, -1), min(k, len(self.ids)))  # type: ignore[attr-defined]
        order = sorted(
            zip(scores[0], positions[0], strict=True), key=lambda hit: (-round(float(hit[0]), 6), int(hit[1]))
        )
        return [self.ids[int(p)] for _, p in order]


_TEXT_VECTORS: dict[str, NDArray[np.float32]] = {}


def embed(texts: Sequence[str]) -> NDArray[np.float32]:
    """MiniLM embeddings of ``texts`` (cached per process by text; one torch thread unless told otherwise)."""
    from memtrial.drafting.embeddings import configure_offline, get_embedder

    os.environ.setdefault("MEMTRIAL_TORCH_THREADS", "1")
    configure_offline()
    todo = sorted({t for t in texts if t not in _TEXT_VECTORS})
    if todo:
        for text, vector in zip(todo, get_embedder().encode(todo), strict=True):
            _TEXT_VECTORS[text] = vector
    if len(_TEXT_VECTORS) > 50_000:
        keep = set(texts)
        for text in [t for t in _TEXT_VECTORS if t not in keep]:
            del _TEXT_VECTORS[text]
    return np.vstack([_TEXT_VECTORS[t] for t in texts]) if texts else np.zeros((0, 384), dtype=np.float32)


class RealWorld:
    """One run of a real-data setting; every draw is keyed by (seed, date, sample).

    Experiences arrive as they mature (``DateContext.added``): there are no
    features up front, no true types, and the learner takes 8 principal
    components of the MiniLM embeddings as content features.
    """

    n_components = 8
    types = None  # real experiences have no planted quality
    reference_calls = 0  # the reference is equal weight (projected onto the mandate)
    wide = 0  # no wider retrieval: a draft budget keeps the odd half of the four

    def __init__(
        self,
        setting: Setting,
        investor: str,
        drafter: Drafter,
        *,
        full_design: bool | Sequence[int] = True,
        self_consistency: bool = True,
    ) -> None:
        if investor not in INVESTORS:
            raise ConfigError(f"investor must be one of {sorted(INVESTORS)}, got {investor!r}", field="investor")
        self.setting, self.investor, self.drafter = setting, INVESTORS[investor], drafter
        self.full_design, self.self_consistency = full_design, self_consistency
        # the subsets drafted on every date: all sixteen, the half fraction, or those given
        self._masks = (
            list(range(16))
            if full_design is True
            else list(half_fraction(4))
            if full_design is False
            else sorted(full_design)
        )
        self.mandate = mandate_text(self.investor)
        s = setting
        self.n_dates = len(s.decisions)
        self.universe: list[NDArray[np.int_]] = []
        self.reference: list[NDArray[np.float64]] = []
        self.groups: list[tuple[NDArray[np.bool_], NDArray[np.bool_]]] = []
        for session in s.decisions:
            members = np.flatnonzero(tradable(s.closes, session, s.history))
            hold = s.closes[session : session + s.horizon + 1, members]
            if not np.isfinite(hold).all():
                j, h = np.argwhere(~np.isfinite(hold).T)[0]
                raise DataError(
                    f"{s.assets[members[j]]} has no close on {s.dates[session + h].date()}, inside the hold of the decision on {s.dates[session].date()}",
                    field="data",
                )
            risky = np.array([s.classes[m] in RISKY for m in members])
            defensive = np.array([s.classes[m] in DEFENSIVE for m in members])
            self.universe.append(members)
            self.groups.append((risky, defensive))
            self.reference.append(project(np.full(len(members), 1.0 / len(members)), risky, defensive, self.investor))
        self.contexts = [self._context_text(d) for d in range(self.n_dates)]
        drafted = self._logging_drafts()
        self.lessons = [self._lesson(d, drafted[d]) for d in range(self.n_dates)]
        self.lesson_vectors = embed([lesson.text for lesson in self.lessons])
        self.context_vectors = embed(self.contexts)
        self.maturity = [session + s.horizon for session in s.decisions]
        self.bank = _Bank(self.lesson_vectors.shape[1])
        self.features = np.zeros((0, self.lesson_vectors.shape[1]))
        self._next_experience = 0
        self._added: list[tuple[int, NDArray[np.float64]]] = []
        self.presented = 0

    def _logging_drafts(self) -> list[NDArray[np.float64]]:
        """The logging agent's memory-free drafts, requested in batches of dates sharing a universe."""
        drafted: list[NDArray[np.float64]] = []
        start = 0
        while start < self.n_dates:
            end = start
            while end < self.n_dates and np.array_equal(self.universe[end], self.universe[start]) and end - start < 64:
                end += 1
            answers = self.drafter.draft([self.draft_request(d, (), 0) for d in range(start, end)])
            drafted += [self._project(d, answers[d - start]) for d in range(start, end)]
            start = end
        return drafted

    # -- texts -------------------------------------------------------------
    def _returns(self, session: int, members: NDArray[np.int_], back: int) -> NDArray[np.float64]:
        closes = self.setting.closes
        return np.asarray(closes[session, members] / closes[session - back, members] - 1.0)

    def _state_lines(self, date: int, brief: bool) -> list[str]:
        s, session, members = self.setting, self.setting.decisions[date], self.universe[date]
        if s.horizon == 1:
            lines = []
            for j, m in enumerate(members):
                if s.classes[m] == "cash":
                    continue
                one, five, twenty = (self._returns(session, members, b)[j] for b in (1, 5, 20))
                line = f"{s.assets[m]}: {_pct(one)} over 1 day, {_pct(five)} over 5 days, {_pct(twenty)} over 20 days."
                news = (s.news or {}).get(s.assets[m], {}).get(s.dates[session], [])
                filings = (s.filings or {}).get(s.assets[m], {}).get(s.dates[session], [])
                if news:
                    shown = news[:1] if brief else news[:2]
                    line += " News: " + " | ".join(n[: 120 if brief else 200] for n in shown)
                if filings and not brief:
                    line += " Filing: " + filings[0][:200]
                lines.append(line)
            return lines
        month, half_year = self._returns(session, members, 20), self._returns(session, members, 126)
        daily = s.closes[session - 20 : session + 1, members]
        vol = np.std(daily[1:] / daily[:-1] - 1.0, axis=0) * np.sqrt(252)
        lines = []
        classes = [s.classes[m] for m in members]
        for name in sorted(set(classes)):
            inside = np.array([c == name for c in classes])
            line = f"{name}: {_pct(month[inside].mean())} over 1 month"
            if not brief:
                line += f", {_pct(half_year[inside].mean())} over 6 months, volatility {100 * vol[inside].mean():.0f}% a year"
            lines.append(line + ".")
        if len(members) > len(set(classes)) and not brief:
            order = np.argsort(-month, kind="stable")
            best = ", ".join(f"{s.assets[members[i]]} {_pct(month[i])}" for i in order[:3])
            worst = ", ".join(f"{s.assets[members[i]]} {_pct(month[i])}" for i in order[::-1][:3])
            lines.append(f"Strongest over 1 month: {best}. Weakest: {worst}.")
        return lines

    def _context_text(self, date: int) -> str:
        s = self.setting
        hold = "1 session" if s.horizon == 1 else f"{s.horizon} sessions"
        head = f"Decision on {s.dates[s.decisions[date]].date()} ({s.name}, hold {hold})."
        return "\n".join([head, *self._state_lines(date, brief=False)])

    def _lesson(self, date: int, weights: NDArray[np.float64]) -> Lesson:
        s, members = self.setting, self.universe[date]
        rel = self.outcome(date)
        previous = self.reference[date]
        gain = float(nav_paths(weights, rel, previous)[-1] - 1.0)
        scores = np.asarray(utility(np.vstack([weights, self.reference[date]]), rel, previous, self.investor.gamma))
        value, excess = 100.0 * float(scores[0]), 100.0 * float(scores[0] - scores[1])
        order = np.argsort(-weights, kind="stable")[:3]
        held = ", ".join(f"{s.assets[members[i]]} {100 * weights[i]:.0f}%" for i in order)
        hold = "session" if s.horizon == 1 else f"{s.horizon} sessions"
        side = "above" if excess >= 0 else "below"
        text = (
            f"On {s.dates[s.decisions[date]].date()} ({' '.join(self._state_lines(date, brief=True))}) the agent held mostly {held}. "
            f"Over the next {hold} it returned {100 * gain:+.2f}%: utility {value:+.2f} pp, {abs(excess):.2f} pp {side} the equal-weight reference."
        )
        return Lesson(text, {s.assets[m]: float(w) for m, w in zip(members, weights, strict=True)}, value, excess)

    # -- drafting ----------------------------------------------------------
    def draft_request(self, date: int, lessons: tuple[Lesson, ...], sample: int) -> DraftRequest:
        s, members = self.setting, self.universe[date]
        return DraftRequest(
            self.contexts[date],
            tuple(s.assets[m] for m in members),
            tuple(s.classes[m] for m in members),
            self.mandate,
            lessons,
            date=date,
            sample=sample,
            task=TASKS.get(s.name, ""),
        )

    def _project(self, date: int, weights: NDArray[np.float64]) -> NDArray[np.float64]:
        risky, defensive = self.groups[date]
        return np.asarray(project(weights, risky, defensive, self.investor))

    @property
    def mandate_projection(self) -> Callable[[int, NDArray[np.float64]], NDArray[np.float64]]:
        """Weights projected onto the investor's mandate over the date's universe."""
        return self.project_onto_mandate

    def project_onto_mandate(self, date: int, weights: NDArray[np.float64]) -> NDArray[np.float64]:
        """Any method's weights made feasible (long only, fully invested, inside the mandate)."""
        clipped = np.clip(np.asarray(weights, dtype=np.float64), 0.0, None)
        return self._project(date, clipped / clipped.sum())

    # -- the run -----------------------------------------------------------
    def context(self, date: int) -> DateContext | None:
        """The date's context, or None while fewer than four experiences have matured.

        Call in date order: the FAISS bank grows as decisions mature.
        """
        s = self.setting
        session = s.decisions[date]
        while self._next_experience < date and self.maturity[self._next_experience] <= session:
            e = self._next_experience
            self.bank.add(e, self.lesson_vectors[e])
            self._added.append((e, self.lesson_vectors[e].astype(np.float64)))
            self._next_experience += 1
        if len(self.bank.ids) < K:
            return None
        added, self._added = self._added, []
        retrieved = self.bank.search(self.context_vectors[date], K)
        masks = self._masks
        requests = [
            self.draft_request(date, tuple(self.lessons[retrieved[j]] for j in range(K) if mask >> j & 1), mask)
            for mask in masks
        ]
        if self.self_consistency:
            top2 = (self.lessons[retrieved[0]], self.lessons[retrieved[1]])
            requests += [self.draft_request(date, top2, 16 + i) for i in range(CONSISTENCY_SAMPLES)]
        answers = self.drafter.draft(requests)
        projected = self._project(date, answers)
        n = len(self.universe[date])
        drafts = np.full((16, n), np.nan)
        drafts[masks] = projected[: len(masks)]
        consistency = projected[len(masks) :].mean(axis=0) if self.self_consistency else np.full(n, np.nan)
        members = self.universe[date]
        window = s.closes[session - s.history : session + 1, members]
        self.presented += 1
        return DateContext(
            index=date,
            session=session,
            maturity=self.maturity[date],
            scored=date >= s.first_test,
            retrieved=tuple(retrieved),
            drafts=drafts,
            reference=self.reference[date],
            self_consistency=consistency,
            history=window[1:] / window[:-1] - 1.0,
            previous=self.reference[date],
            equal=self.reference[date],
            added=tuple(added),
            assets=tuple(s.assets[m] for m in members),
            label=str(s.dates[session].date()),
        )

    def outcome(self, date: int) -> NDArray[np.float64]:
        """(horizon, n) closes over the hold relative to the decision close."""
        s, session, members = self.setting, self.setting.decisions[date], self.universe[date]
        return np.asarray(s.closes[session + 1 : session + 1 + s.horizon, members] / s.closes[session, members])
