"""Draft budgets (method 4.11): which drafts a plan asks for when LLM calls per decision are limited.

A budget B is the average number of draft calls per decision the agent may
spend. It is spent from a running credit: every plan adds B; a plan whose
credit covers the whole design is a **trial**: every designed subset is
drafted, and the decision is credited, scored and learnt from exactly as
without a budget. Any other plan **exploits** what is known and learns
nothing: it drafts the memory-free subset and, where memory is trusted, the
designed subset the decision would act on (one or two calls). Credit never
goes negative, so after any number of decisions the calls made are at most B
times that number.

Trust only ever grows from trial scores, so the e-process of method 4.8 sees a
subsequence of the scores it would see without a budget, chosen before their
outcomes exist: it stays a nonnegative supermartingale under the null, and
P(ever omega >= x) <= alpha^x holds at every budget.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.action import best_subset, dial_gains
from memtrial.errors import ConfigError
from memtrial.fallback import mixture
from memtrial.records import Dial

__all__ = ["DraftCredit", "check_budget", "exploit_masks", "exploit_weights", "memory_row"]


def check_budget(budget: float | None) -> float | None:
    """A draft budget: None (the whole design every time) or a finite number of calls >= 1."""
    if budget is None:
        return None
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

    def is_trial(self, budget: float | None, runs: int) -> bool:
        """Add this decision's budget; True when the credit covers the whole design (``runs`` calls)."""
        if budget is None:
            return True
        self.credit += budget
        return self.credit >= runs

    def spend(self, calls: int) -> None:
        self.credit -= calls
        self.calls += calls
        self.decisions += 1

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
    (:func:`~memtrial.action.best_subset`) with share 1 when the gate is open and its gain positive.
    The dial: the subset of the largest predicted gain (the dial's g_S, twice its members' mean value)
    with share omega when both are positive. (None, 0.0): memory is not trusted.
    """
    every = list(range(1, 1 << len(ids)))
    if not every:
        return None, 0.0
    if dial is not None:
        gains = dial_gains(np.array([predictions[e] for e in ids]), every)
        top = int(np.argmax(gains))  # ties: the smaller mask
        if dial.trust_weight <= 0.0 or gains[top] <= 0.0:
            return None, 0.0
        return every[top], float(dial.trust_weight)
    best, gain = best_subset(predictions, ids, every)
    if not is_open or gain <= 0.0:
        return None, 0.0
    return every[best], 1.0


def exploit_masks(mask: int | None, on_memory: bool) -> list[int]:
    """The one draft of an exploiting plan: memory's subset when the decision is played on memory, else
    the memory-free draft."""
    return [mask] if on_memory and mask is not None else [0]


def exploit_weights(
    mask: int, draft: NDArray[np.float64], q: float, reference: NDArray[np.float64]
) -> NDArray[np.float64]:
    """What an exploiting decision plays from its one draft (:func:`exploit_masks`): memory's as it is, the
    memory-free one in the anchored mixture ``q * reference + (1 - q) * draft``."""
    if mask != 0:
        return np.asarray(draft, dtype=np.float64)
    return np.asarray(mixture(np.asarray(q), reference, draft), dtype=np.float64)
