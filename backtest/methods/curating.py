"""Curation variants (method 4.12-4.14) served from what the world's other variants compute anyway.

A variant with quarantine on keeps a quarantine book (:class:`~memtrial.curation.Curator`), and the book
acts on later plans only once it has an *event*: a quarantine, or a detected change of an experience's
contributions (:meth:`Curator.observe` returns them). Until its first event a variant with quarantine
plans, acts and learns exactly as the same variant without it, so:

1. **quarantine over similarity retrieval** (``memtrial_quarantine``): its twin without quarantine is
   replayed (:mod:`backtest.methods.replay`), and the core's own book, fed the twin's settled raw
   contributions in settlement order, says whether the book ever has an event. With none the variant *is*
   its twin and is read off the replay; with one its online engine walks the world
   (:class:`Twinned`).
2. **value-aware retrieval with and without quarantine** (``memtrial_curated`` and
   ``memtrial_value_aware``): their retrieval follows their own values and trust weight, so no replay
   knows their dates up front; one online engine walks the variant with quarantine, and the variant
   without follows it until the settlement that gives the book its first event, where it continues
   from a copy of that engine's state with the quarantine off (:meth:`MemTrialMethod.fork`) and walks on
   alone (:class:`SharedWalk`).

Every decision comes from the core's own engine or the replay (itself identical to the engines), and
whether the book has an event from the core's own book, so each variant is identical to its own online
engine whatever the quarantine rule is: ``tests/backtest/test_replay.py`` checks it on every regime.
Anything else that curates (a value-aware variant whose twin with quarantine is not asked for, or one
with quarantine whose twin the replay does not serve) runs its own online engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from backtest.methods.base import GateState, Method, Trajectory, Walk, stacked
from backtest.methods.memtrial_methods import MemTrialMethod
from backtest.methods.replay import FamilyMember, replays
from memtrial.curation import Curator, QuarantineConfig, RetrievalMode
from memtrial.engine.lifecycle import EngineConfig
from memtrial.records import ExperienceId

__all__ = ["SharedWalk", "Twinned", "first_event", "shared_walks", "similarity_twin"]

Online = Callable[[str], MemTrialMethod]


def similarity_twin(config: EngineConfig) -> EngineConfig | None:
    """The replayed twin of a variant with quarantine over similarity retrieval: the same configuration with
    the quarantine off (None: the variant does not have one, or the replay does not serve the twin)."""
    if config.retrieval is not RetrievalMode.SIMILARITY or not config.quarantine.enabled:
        return None
    twin = replace(config, quarantine=replace(config.quarantine, enabled=False))
    return twin if replays(twin) else None


def first_event(
    config: QuarantineConfig, settlements: Iterable[tuple[int, Mapping[ExperienceId, float]]]
) -> int | None:
    """The index of the first date whose settlement gives a quarantine book under ``config`` an event (a
    quarantine or a change), or None. settlements: (date index, raw contribution of each experience) of each
    plan that learns, in settlement order, as an engine hands them to its book."""
    book = Curator(config)
    for index, contributions in settlements:
        if book.observe(f"d{index}", contributions):
            return index
    return None


class Twinned(Method):
    """A variant with quarantine over similarity retrieval: its replayed twin while its book has no event,
    else its online engine (module docstring, 1)."""

    uses_gate = True

    def __init__(self, twin: FamilyMember, quarantine: QuarantineConfig, online: Callable[[], MemTrialMethod]) -> None:
        super().__init__(twin.scoring)
        self.id, self._twin, self._quarantine, self._online = twin.id, twin, quarantine, online
        self._served: FamilyMember | MemTrialMethod | None = None

    def served(self) -> FamilyMember | MemTrialMethod:
        """The replayed twin, or the online engine where the book has an event (decided once, when first asked)."""
        if self._served is None:
            family = self._twin.family()
            event = first_event(self._quarantine, family.contributions(self.id))
            self._served = self._twin if event is None else self._online()
        return self._served

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        raise TypeError(f"{self.id} is served a whole walk at once: ask for its trajectory")

    def trajectory(self, walk: Walk, projected: bool = True) -> Trajectory:
        return self.served().trajectory(walk, projected)

    def values(self) -> dict[int, float]:
        return self.served().values()

    def draft_calls(self, reference_calls: int) -> float | None:
        return self.served().draft_calls(reference_calls)

    @property
    def quarantining(self) -> bool:
        return True

    @property
    def retrievals(self) -> list[tuple[int, ...]]:
        """The experiences each decision retrieved (the twin's: the replay's dates as its engine sees them)."""
        served = self.served()
        return served.retrievals if isinstance(served, MemTrialMethod) else list(served.family().ids)

    @property
    def quarantines(self) -> list[tuple[int, int]]:
        served = self.served()
        return served.quarantines if isinstance(served, MemTrialMethod) else []


class SharedWalk:
    """One online walk of a value-aware variant with quarantine (``lead``) that serves the same variant
    without quarantine too (module docstring, 2): each decision's weights and gate state per variant."""

    def __init__(self, lead: MemTrialMethod, follower_id: str, follower_config: EngineConfig) -> None:
        self.lead, self.follower_id, self.follower_config = lead, follower_id, follower_config
        self.methods: dict[str, MemTrialMethod] = {}  # the engine that ended each variant's walk
        self.decided: dict[str, list[NDArray[np.float64]]] = {}
        self.states: dict[str, list[GateState]] = {}
        self.forked_at: int | None = None  # the index of the date whose settlement forked the follower

    def run(self, walk: Walk) -> None:
        """Walk the world once (the first time a member asks), in its calendar order."""
        if self.methods:
            return
        lead, ids = self.lead, (self.lead.id, self.follower_id)
        follower: MemTrialMethod | None = None
        decided = {i: [np.zeros(0)] * len(walk.contexts) for i in ids}
        states: dict[str, list[GateState]] = {i: [] for i in ids}
        for kind, position in walk.events:
            walking = (lead,) if follower is None else (lead, follower)
            if kind == "decide":
                for method in walking:
                    decided[method.id][position] = method.decide(walk.contexts[position])
                    states[method.id].append(method.gate_state())
                if follower is None:  # the same plan as the lead's until the book's first event
                    decided[self.follower_id][position] = decided[lead.id][position]
                    states[self.follower_id].append(states[lead.id][-1])
                continue
            for method in walking:
                method.observe(walk.outcomes[position], decided[method.id][position], float("nan"))
            if follower is None and _has_event(lead):
                follower = lead.fork(self.follower_id, self.follower_config)
                self.forked_at = walk.contexts[position].index
        self.decided, self.states = decided, states
        self.methods = {lead.id: lead, self.follower_id: lead if follower is None else follower}


def _has_event(method: MemTrialMethod) -> bool:
    """Whether the method's quarantine book has had an event: an experience quarantined or changed."""
    book = method.engine.curator
    if book is None:
        raise ValueError(f"{method.id} keeps no quarantine book")
    return any(e.quarantined_at is not None or e.changed_at is not None for e in book.evidence.values())


class SharedMember(Method):
    """One variant of a :class:`SharedWalk`, seen by the runner as a method of its own."""

    uses_gate = True

    def __init__(self, method_id: str, shared: SharedWalk, quarantining: bool) -> None:
        super().__init__(shared.lead.scoring)
        self.id, self._shared, self._quarantining = method_id, shared, quarantining

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        raise TypeError(f"{self.id} is served a whole walk at once: ask for its trajectory")

    def trajectory(self, walk: Walk, projected: bool = True) -> Trajectory:
        self._shared.run(walk)
        decided, states = self._shared.decided[self.id], self._shared.states[self.id]
        return Trajectory(
            stacked([walk.held(position, weights, projected) for position, weights in enumerate(decided)]),
            np.array([state[0] for state in states], dtype=bool),
            np.array([np.nan if state[1] is None else state[1] for state in states], dtype=np.float64),
            np.array([np.nan if state[2] is None else state[2] for state in states], dtype=np.float64),
        )

    def _method(self) -> MemTrialMethod:
        if not self._shared.methods:
            raise RuntimeError(f"{self.id} has not walked yet: ask for its trajectory first")
        return self._shared.methods[self.id]

    def values(self) -> dict[int, float]:
        return self._method().values()

    def draft_calls(self, reference_calls: int) -> float | None:
        return self._method().draft_calls(reference_calls)

    @property
    def quarantining(self) -> bool:
        return self._quarantining

    @property
    def retrievals(self) -> list[tuple[int, ...]]:
        return self._method().retrievals

    @property
    def quarantines(self) -> list[tuple[int, int]]:
        return self._method().quarantines if self._quarantining else []


def shared_walks(configs: Mapping[str, EngineConfig], online: Online) -> dict[str, Method]:
    """The variants of ``configs`` that share a walk: each value-aware variant without quarantine whose
    twin with quarantine (the same configuration but the quarantine) is among ``configs`` follows the first
    such twin (:class:`SharedWalk`); the others are left out (they run their own online engines)."""
    members: dict[str, Method] = {}
    for follower_id, config in configs.items():
        if config.retrieval is not RetrievalMode.VALUE_AWARE or config.quarantine.enabled:
            continue
        lead_id = next(
            (
                m
                for m, c in configs.items()
                if m not in members and c.quarantine.enabled and replace(c, quarantine=config.quarantine) == config
            ),
            None,
        )
        if lead_id is None:
            continue
        shared = SharedWalk(online(lead_id), follower_id, config)
        members[lead_id] = SharedMember(lead_id, shared, True)
        members[follower_id] = SharedMember(follower_id, shared, False)
    return members
