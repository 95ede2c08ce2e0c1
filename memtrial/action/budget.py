"""Draft budgets (method 4.11): which drafts a plan asks for when LLM calls per decision are limited.

A budget B is the average number of draft calls per decision the agent may
spend. It is spent from a running credit: every plan adds B; a plan whose
credit covers the whole design is a **trial**: every designed subset is
drafted, and the decision is credited, scored and learnt from exactly as
without a budget. Any other plan **exploits** what is known and learns
nothing: it drafts memory's subset (where memory is trusted) or the
memory-free one, and at partial trust with the memory-free draft as the
reference both, to play the dial's blend.

With a **horizon** H (the number of decisions the budget covers) the credit
may borrow what the later decisions within it will not spend: each of them
keeps one call, and of the B - 1 per later decision a share 1 - R
(:data:`RESERVE`) is lent now, so trials come first, while there is most to
learn and longest to use it. The share R held back comes in as the decisions
pass, so trials recur through the horizon: experiences that arrive late and
lessons that go stale are still trialled. A plan that retrieves a **fresh**
experience (one whose value rests on fewer than :data:`FRESH_CONTRIBUTIONS`
contributions) may take its trial early, from what is held back (up to
:data:`FRESH_AHEAD` trials ahead). Without a horizon the credit never goes
negative. Either way every decision can afford its one
call, and after n decisions the calls made are at most
B * n + (B - 1) * max(H - n, 0): at most B * H over the horizon, B * n
without one.

**Retries.** Every call sent to a provider is paid from the credit, a retry
of a malformed answer too: a decision drafted by the server reserves, when it
is planned, the retries its drafter may make (``max_retries`` per draft) out of
what the credit can spare then (:meth:`DraftCredit.spare`: without a horizon
the credit stays >= 0, with one every later decision keeps its one call), and
gets back those it did not make. A draft still malformed when no retry is left
fails the decision (it is withdrawn and learns nothing), so the bounds above
hold for the calls providers receive, retries included.

Which plans are trials is decided at plan time from what is known then, never
from the outcomes still to come, so the e-process of method 4.8 sees a
predictably chosen subsequence of the scores it would see without a budget:
it stays a nonnegative supermartingale under the null, and
P(ever omega >= x) <= alpha^x holds at every budget. A trial sees a quarter
or fewer of the scores the whole design would, so a budget's e-process bets
on a wider grid (:data:`BUDGET_BETS`; any bet below 1 is valid for scores in
[-1, 1]).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.action.fallback import mixture
from memtrial.action.rule import best_subset, dial_gains
from memtrial.errors import ConfigError
from memtrial.numeric.plain import plain_number
from memtrial.records import Dial
from memtrial.trust.gate import GateConfig

__all__ = [
    "BUDGET_BETS",
    "FRESH_AHEAD",
    "FRESH_CONTRIBUTIONS",
    "RESERVE",
    "SOLO_TRUST",
    "DraftCredit",
    "budget_gate",
    "check_budget",
    "check_horizon",
    "dial_memory_rows",
    "exploit_masks",
    "exploit_plan",
    "exploit_weights",
    "is_fresh",
    "memory_row",
    "BudgetPlan",
    "plan_budget",
]

#: the least trust at which an exploiting decision that cannot blend plays memory's draft alone
#: (under the null the dial ever reaches it with probability <= alpha ** 0.5)
SOLO_TRUST = 0.5

#: R, the share of a horizon's lending held back from the first trials for trials later within it (chosen on
#: PlantedMem's dev seeds, method 4.11; 0 lends it all at once: trials first, none after them)
RESERVE = 0.25

#: an experience whose value rests on fewer contributions than this is fresh: a plan that retrieves one may
#: take its trial early (method 4.11; chosen on the dev seeds)
FRESH_CONTRIBUTIONS = 2

#: how far ahead of the held-back share's schedule a plan retrieving a fresh experience may trial, in trials
#: of its design (never more than what is still held back)
FRESH_AHEAD = 2

#: the e-process's bets at a draft budget (chosen on PlantedMem's dev seeds; the whole design keeps
#: :data:`memtrial.trust.gate.DEFAULT_BETS`)
BUDGET_BETS: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8)


def budget_gate(gate: GateConfig, budget: float | None) -> GateConfig:
    """The gate an engine at ``budget`` uses: ``gate`` with :data:`BUDGET_BETS` at a budget, as it is without one."""
    return gate if budget is None else replace(gate, bets=BUDGET_BETS)


def check_horizon(horizon: int | None, budget: float | None) -> int | None:
    """A draft horizon: None, or the number of decisions (an integer >= 1) a draft budget covers."""
    if horizon is None:
        return None
    horizon = plain_number(horizon)  # a NumPy integer is the same number
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ConfigError(
            f"draft_horizon must be a number of decisions (an integer >= 1) or null, got {horizon!r}",
            field="draft_horizon",
        )
    if budget is None:
        raise ConfigError("draft_horizon needs a draft_budget to spread over it", field="draft_horizon")
    return horizon


def check_budget(budget: float | None) -> float | None:
    """A draft budget: None (the whole design every time) or a finite number of calls >= 1."""
    if budget is None:
        return None
    budget = plain_number(budget)
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not np.isfinite(budget) or budget < 1:
        raise ConfigError(
            f"draft_budget must be a number of draft calls per decision >= 1 (or null for the whole design), got {budget!r}",
            field="draft_budget",
        )
    return float(budget)


@dataclass(slots=True)
class DraftCredit:
    """The running credit of a draft budget (O(1) state): calls still allowed, calls made, decisions planned."""

    credit: float = 0.0
    calls: int = 0
    decisions: int = 0
    dither: float = 0.0  # memory's shares summed over exploiting decisions, less the decisions played on memory

    def is_trial(self, budget: float | None, runs: int, horizon: int | None = None, fresh: bool = False) -> bool:
        """Whether the next decision is a trial: the credit, with that decision's budget added and what the
        horizon lends now, covers the whole design (``runs`` calls). The horizon lends a share 1 - R
        (:data:`RESERVE`) of the (B - 1) per later decision it could; a ``fresh`` plan (one retrieving a fresh
        experience) may also take up to :data:`FRESH_AHEAD` trials of what is held back. Always True without a
        budget. A query: the budget is added by :meth:`deposit`."""
        if budget is None:
            return True
        later = 0 if horizon is None else max(horizon - self.decisions - 1, 0)
        lending = (budget - 1.0) * later
        held = RESERVE * lending
        ahead = min(FRESH_AHEAD * runs, held) if fresh else 0.0
        return (self.credit + budget) + (lending - held + ahead) >= runs

    def deposit(self, budget: float) -> None:
        """Add a planned decision's budget to the credit."""
        self.credit += budget

    def affords(self, calls: int, budget: float, horizon: int | None) -> bool:
        """Whether this decision (its budget added) may make ``calls`` calls and still leave one call
        to every later decision within the horizon."""
        later = 0 if horizon is None else max(horizon - self.decisions - 1, 0)
        return self.credit + (budget - 1.0) * later >= calls

    def spend(self, calls: int) -> None:
        """Pay a plan's ``calls`` drafts: the decision is counted."""
        self.credit -= calls
        self.calls += calls
        self.decisions += 1

    def spare(self, budget: float, horizon: int | None) -> int:
        """Calls the credit affords beyond the plans made so far (retries of malformed answers), still
        leaving one call to every later decision within the horizon: ``credit + (budget - 1) * later``,
        rounded down, ``later`` the decisions the horizon has left after those planned."""
        later = 0 if horizon is None else max(horizon - self.decisions, 0)
        return max(int(np.floor(self.credit + (budget - 1.0) * later + 1e-9)), 0)

    def pay(self, calls: int) -> None:
        """Pay ``calls`` extra calls of the decision last planned (no decision is counted)."""
        self.credit -= calls
        self.calls += calls

    def refund(self, calls: int) -> None:
        """Give back ``calls`` paid with :meth:`pay` and never made."""
        self.credit += calls
        self.calls -= calls

    def on_memory(self, share: float) -> bool:
        """Whether an exploiting decision whose memory share is ``share`` plays memory's draft alone (one
        call either way): the shares accumulate, and a decision is played on memory each time their sum
        passes one, so over exploiting decisions memory is played in proportion to its share."""
        if share <= 0.0:
            return False
        self.dither += share
        if self.dither >= 1.0:
            self.dither -= 1.0
            return True
        return False

    def to_dict(self) -> dict[str, Any]:
        return {"credit": self.credit, "calls": self.calls, "decisions": self.decisions, "dither": self.dither}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> DraftCredit:
        if not data:
            return cls()
        return cls(float(data["credit"]), int(data["calls"]), int(data["decisions"]), float(data.get("dither", 0.0)))


def memory_row(
    dial: Dial | None,
    is_open: bool,
    predictions: Mapping[Any, float],
    ids: Sequence[Hashable],
) -> tuple[int | None, float]:
    """(mask the decision would act on, the share it would get).

    An exploiting decision drafts one subset, so it may be any subset of the retrieved experiences,
    not only a designed one. The gate: the best subset by the gate's rule
    (:func:`~memtrial.action.rule.best_subset`) with share 1 when the gate is open and its gain positive.
    The dial: the subset of the largest predicted gain (the dial's g_S, twice its members' mean value)
    with share omega when both are positive. (None, 0.0): memory is not trusted.
    """
    every = list(range(1, 1 << len(ids)))
    if not every:
        return None, 0.0
    if dial is not None:
        values = np.array([[predictions[e] for e in ids]], dtype=np.float64).reshape(1, len(ids))
        return dial_memory_rows(np.array([dial.trust_weight]), values)[0]
    best, gain = best_subset(predictions, ids, every)
    if not is_open or gain <= 0.0:
        return None, 0.0
    return every[best], 1.0


def dial_memory_rows(
    trust_weights: NDArray[np.float64], predictions: NDArray[np.float64]
) -> list[tuple[int | None, float]]:
    """:func:`memory_row` under the dial for L plans of k experiences at once, each as alone: trust_weights
    (L,) the dial's omega, predictions (L, k) the retrieved experiences' values in retrieval order."""
    count, k = predictions.shape
    every = list(range(1, 1 << k))
    if not every:
        return [(None, 0.0)] * count
    gains = dial_gains(predictions, every)
    top = np.argmax(gains, axis=1)  # ties: the smaller mask
    best = gains[np.arange(count), top]
    return [
        (None, 0.0) if weight <= 0.0 or gain <= 0.0 else (every[row], float(weight))
        for weight, row, gain in zip(trust_weights.tolist(), top.tolist(), best.tolist(), strict=True)
    ]


def is_fresh(counts: Iterable[int]) -> bool:
    """Whether a plan retrieves a fresh experience: one whose value rests on fewer than
    :data:`FRESH_CONTRIBUTIONS` contributions (``counts``: each retrieved experience's)."""
    return any(count < FRESH_CONTRIBUTIONS for count in counts)


def exploit_masks(mask: int | None, on_memory: bool) -> list[int]:
    """The one draft of an exploiting plan played on one draft: memory's subset when the decision is
    played on memory, else the memory-free draft."""
    return [mask] if on_memory and mask is not None else [0]


def exploit_plan(
    credit: DraftCredit,
    memory: int | None,
    trusted: float,
    budget: float,
    horizon: int | None,
    *,
    pairs: bool,
    blends: bool,
) -> tuple[list[int], float]:
    """(masks, memory's share) of an exploiting plan whose memory row is ``(memory, trusted)``
    (:func:`memory_row`).

    At partial trust (0 < share < 1) the decision plays the dial's blend where it can: ``pairs`` (the
    memory-free draft is the reference) drafts it beside memory's when the credit has the second call;
    ``blends`` (a given reference) blends memory's one draft with the reference. Otherwise (drafts
    that cannot be blended, or no second call) memory's draft is played alone on a share of such
    decisions equal to its share (:meth:`DraftCredit.on_memory`), the memory-free draft on the rest,
    and only from :data:`SOLO_TRUST` on: a decision played on memory alone takes memory's whole risk,
    not a share of it.
    """
    partial = memory is not None and 0.0 < trusted < 1.0
    if partial and pairs and credit.affords(2, budget, horizon):
        return [0, memory], trusted  # type: ignore[list-item]
    if partial and blends:
        return [memory], trusted  # type: ignore[list-item]
    alone = trusted if trusted >= SOLO_TRUST else 0.0
    on_memory = memory is not None and credit.on_memory(alone)
    return exploit_masks(memory, on_memory), 1.0 if on_memory else 0.0


def exploit_weights(
    masks: Sequence[int], drafts: NDArray[np.float64], q: float, reference: NDArray[np.float64], share: float
) -> NDArray[np.float64]:
    """What an exploiting decision plays from its drafts (rows aligned with ``masks``).

    - ``[0, S]`` (a blend at partial trust, the memory-free draft the reference):
      ``share * memory + (1 - share) * memory-free``;
    - ``[S]`` with ``0 < share < 1`` (a given reference): ``share * memory + (1 - share) * reference``;
    - ``[S]`` otherwise: memory's draft as it is;
    - ``[0]``: the anchored mixture ``q * reference + (1 - q) * memory-free``.
    """
    if len(masks) == 2:
        return np.asarray(share * drafts[1] + (1.0 - share) * drafts[0], dtype=np.float64)
    if masks[0] != 0:
        if 0.0 < share < 1.0:
            return np.asarray(share * drafts[0] + (1.0 - share) * reference, dtype=np.float64)
        return np.asarray(drafts[0], dtype=np.float64)
    return np.asarray(mixture(np.asarray(q), reference, drafts[0]), dtype=np.float64)


@dataclass(frozen=True, slots=True)
class BudgetPlan:
    """What a draft budget makes of one plan: whether it is a trial, the masks it drafts (the reference draft
    added outside a design without one: ``extra_reference``), memory's share of an exploiting plan, and
    the credit after it."""

    trial: bool
    masks: tuple[int, ...]
    memory_share: float
    extra_reference: bool
    credit: DraftCredit


def plan_budget(
    credit: DraftCredit,
    budget: float | None,
    horizon: int | None,
    masks: Sequence[int],
    *,
    needs_reference: bool,
    memory: Callable[[], tuple[int | None, float]],
    pairs: bool,
    blends: bool,
    fresh: Callable[[], bool] | None = None,
) -> BudgetPlan:
    """The budget's plan for a decision whose design is ``masks``, from ``credit`` (left unchanged: the
    new credit is returned).

    Without a budget every plan is a trial. With one, a plan whose credit covers the design (and the
    reference draft the decision ``needs_reference``) is a trial, and so is one that retrieves a fresh
    experience (``fresh()``, asked for only when the credit would cover its trial early:
    :meth:`DraftCredit.is_trial`); any other exploits its memory row (``memory()``, :func:`memory_row`,
    asked for only then) as :func:`exploit_plan` says. The plan's calls are then paid from the credit.
    """
    if budget is None:
        drafted = (*masks, 0) if needs_reference else tuple(masks)
        return BudgetPlan(True, drafted, 0.0, needs_reference, credit)
    after = replace(credit)
    runs = len(masks) + int(needs_reference)
    trial = after.is_trial(budget, runs, horizon) or (
        fresh is not None and after.is_trial(budget, runs, horizon, fresh=True) and fresh()
    )
    after.deposit(budget)
    chosen, share = list(masks), 0.0
    if not trial:  # one or two drafts, nothing learnt (method 4.11)
        row, trusted = memory()
        chosen, share = exploit_plan(after, row, trusted, budget, horizon, pairs=pairs, blends=blends)
    extra = trial and needs_reference
    if extra:  # the reference draft, outside a design without one
        chosen = [*chosen, 0]
    after.spend(len(chosen))
    return BudgetPlan(trial, tuple(chosen), share, extra, after)
