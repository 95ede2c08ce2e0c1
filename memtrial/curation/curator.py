"""An agent's quarantine book (method 4.13, 4.14): every experience's running test, the slots handed out,
and what each matured contribution did; and its replay from a log after a correction."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memtrial.curation.quarantine import ErrorControl, Evidence, QuarantineConfig, count
from memtrial.curation.ranking import Posterior
from memtrial.errors import InputError, StateError
from memtrial.records import ExperienceId

__all__ = ["RESET_PRIOR", "Curator", "Event", "contribution_counts", "replay", "setting_at_start"]

#: contributions since a change whose sample variance is at most n times this share of their squared mean are
#: alike: the running sums' rounding, which grows with their number n, not a measured spread
ALIKE = 1e-12
RESET_PRIOR = 2.0  # after a detected change, a value is its mean since the change shrunk by n / (n + this)


@dataclass(frozen=True, slots=True)
class Event:
    """What a settlement did to one experience: ``quarantine`` or ``change``, with the evidence then."""

    kind: str
    experience_id: ExperienceId
    payload: Mapping[str, Any]


class Curator:
    """The tests of one agent's experiences (O(experiences) state)."""

    def __init__(self, config: QuarantineConfig) -> None:
        self.config = config
        self.evidence: dict[ExperienceId, Evidence] = {}
        self.next_slot = 1
        self.abs_total = 0.0  # the sum of |c| of every contribution settled (the weighted sign's scale)
        self.abs_count = 0
        self.discoveries = 0  # quarantines made (released ones included): r of the fdr threshold

    @property
    def counted(self) -> int:
        """r, the quarantines that lower the next threshold: every one made under ``fdr``, none under ``fwer``."""
        return self.discoveries if self.config.control is ErrorControl.FDR else 0

    @property
    def scale(self) -> float | None:
        """sigma of the weighted sign: ``clip`` times the mean |c| of the contributions settled so far
        (None with ``clip`` None or before any nonzero one)."""
        if self.config.clip is None or self.abs_total <= 0.0:
            return None
        return self.config.clip * self.abs_total / self.abs_count

    def _take_slot(self) -> int:
        slot = self.next_slot
        self.next_slot += 1
        return slot

    def observe(self, decision_id: str, contributions: Mapping[ExperienceId, float]) -> list[Event]:
        """Add one settled trial's raw contributions; the quarantines and changes they caused. The weighted
        sign's scale is that of the contributions settled before this trial (predictable)."""
        events = []
        scale = self.scale
        for experience_id, contribution in contributions.items():
            evidence = self.evidence.get(experience_id)
            if evidence is None:
                evidence = self.evidence[experience_id] = Evidence(self._take_slot())
            verdict = evidence.observe(
                decision_id, float(contribution), self.config, self.next_slot, scale, self.counted
            )
            if verdict.changed:
                self.next_slot += 1
                events.append(Event("change", experience_id, self.payload(experience_id, decision_id)))
            if verdict.quarantined:
                events.append(self._quarantined(experience_id, decision_id))
        if events and self.config.control is ErrorControl.FDR:
            events.extend(self._sweep(decision_id))
        for contribution in contributions.values():
            if math.isfinite(contribution):
                self.abs_total += abs(float(contribution))
                self.abs_count += 1
        return events

    def _quarantined(self, experience_id: ExperienceId, decision_id: str) -> Event:
        """The quarantine event (with the threshold it crossed), then one more discovery."""
        event = Event("quarantine", experience_id, self.payload(experience_id, decision_id))
        self.discoveries += 1
        return event

    def _sweep(self, decision_id: str) -> list[Event]:
        """Under ``fdr``: every running test whose wealth meets the threshold the new discoveries lowered is
        quarantined too, in the order the tests started, until none is (the comparison a contribution makes)."""
        events: list[Event] = []
        swept = True
        while swept:
            swept = False
            for experience_id, evidence in self.evidence.items():
                if evidence.check(decision_id, self.config, self.counted):
                    events.append(self._quarantined(experience_id, decision_id))
                    swept = True
        return events

    def payload(self, experience_id: ExperienceId, decision_id: str | None) -> dict[str, Any]:
        """The evidence of one experience now, as a log entry's payload (``date``: the decision, if any)."""
        evidence = self.evidence[experience_id]
        payload = evidence.payload(experience_id, self.config.level, self.config.spread, self.counted)
        return {"date": decision_id, **payload, "discoveries": self.counted}

    def is_quarantined(self, experience_id: ExperienceId) -> bool:
        evidence = self.evidence.get(experience_id)
        return evidence is not None and evidence.quarantined_at is not None

    @property
    def quarantined(self) -> tuple[ExperienceId, ...]:
        return tuple(e for e, x in self.evidence.items() if x.quarantined_at is not None)

    def changed_at(self, experience_id: ExperienceId) -> str | None:
        evidence = self.evidence.get(experience_id)
        return None if evidence is None else evidence.changed_at

    def release(self, experience_id: ExperienceId) -> Evidence:
        """Take an experience out of quarantine; its test starts again in a fresh slot."""
        if not self.is_quarantined(experience_id):
            raise InputError(f"experience {experience_id!r} is not quarantined", field="experience_id")
        evidence = self.evidence[experience_id]
        evidence.quarantined_at = None
        evidence.restart(self._take_slot())
        return evidence

    def force(self, experience_id: ExperienceId, decision_id: str | None) -> None:
        """Mark an experience quarantined as a log entry recorded it (a replay keeps served decisions)."""
        evidence = self.evidence.get(experience_id)
        if evidence is None:
            evidence = self.evidence[experience_id] = Evidence(self._take_slot())
        evidence.quarantined_at = decision_id or ""
        self.discoveries += 1

    def regime_posterior(self, experience_id: ExperienceId) -> Posterior | None:
        """The value learnt since a detected change (mean and standard error of the contributions since
        it), or None for an experience without a change. The standard error of contributions that are all
        alike (one, or more that agree: no spread measured) is |mean| / sqrt(n), never 0; missing while they
        are all 0."""
        evidence = self.evidence.get(experience_id)
        if evidence is None or evidence.changed_at is None:
            return None
        n = evidence.regime_n  # since the change, a release between (which restarts the test) or not
        if n == 0:
            return Posterior(0.0, None, 0)
        mean = evidence.regime_total / n
        variance = 0.0 if n == 1 else max(evidence.regime_squares - n * mean * mean, 0.0) / (n - 1)
        if (
            variance <= ALIKE * n * mean * mean
        ):  # one contribution, or all alike: no spread measured, |mean| stands for it
            return Posterior(mean, abs(mean) / math.sqrt(n) if mean != 0.0 else None, n)
        return Posterior(mean, math.sqrt(variance / n), n)

    def since_changes(self, experience_ids: Iterable[ExperienceId]) -> dict[ExperienceId, Posterior]:
        """:meth:`regime_posterior` of each of ``experience_ids`` with a detected change (method 4.14): what
        the ranking reads of it instead of the learner's posterior; the others are left out."""
        since = {}
        for experience_id in experience_ids:
            regime = self.regime_posterior(experience_id)
            if regime is not None:
                since[experience_id] = regime
        return since

    def reset_values(self, experience_ids: Iterable[ExperienceId]) -> dict[ExperienceId, float]:
        """The value a plan freezes for each of ``experience_ids`` whose contributions changed (method 4.14):
        the mean of its contributions since the change shrunk to 0 as n / (n + ``RESET_PRIOR``), 0 before
        any. Experiences without a change are left out (their value is the learner's)."""
        return {
            e: regime.mean * regime.n / (regime.n + RESET_PRIOR)
            for e, regime in self.since_changes(experience_ids).items()
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "next_slot": self.next_slot,
            "evidence": [[e, x.to_dict()] for e, x in self.evidence.items()],
            "abs_total": self.abs_total,
            "abs_count": self.abs_count,
            "discoveries": self.discoveries,
        }

    @classmethod
    def from_dict(cls, config: QuarantineConfig, data: Mapping[str, Any]) -> Curator:
        """A stored book, checked (a StateError naming the part otherwise): one test per experience, each in a
        slot below ``next_slot``, counts >= 0, the mean absolute contribution's sums finite and consistent."""
        curator = cls(config)
        curator.next_slot = count(data["next_slot"], "next_slot", 1)
        pairs = [(e, Evidence.from_dict(x)) for e, x in data["evidence"]]
        curator.evidence = dict(pairs)
        if len(curator.evidence) != len(pairs):
            repeated = sorted({str(e) for e, _ in pairs if sum(1 for f, _ in pairs if f == e) > 1})
            raise StateError(f"curation: an experience has one test, repeated: {repeated}")
        if late := [e for e, x in pairs if x.slot >= curator.next_slot]:
            raise StateError(f"curation: tests of {late} hold slots not yet given (next_slot {curator.next_slot})")
        curator.abs_total = float(data.get("abs_total", 0.0))
        curator.abs_count = count(data.get("abs_count", 0), "abs_count")
        if not (math.isfinite(curator.abs_total) and curator.abs_total >= 0.0) or (
            curator.abs_count == 0 and curator.abs_total != 0.0
        ):
            raise StateError(
                f"curation: abs_total must be finite, >= 0 and 0 without contributions, got {curator.abs_total!r}"
            )
        curator.discoveries = count(data.get("discoveries", len(curator.quarantined)), "discoveries")
        return curator


def contribution_counts(
    curator: Curator | None, experience_ids: Sequence[ExperienceId], learnt: Callable[[ExperienceId], int]
) -> list[int]:
    """How many contributions each experience's value rests on now (a draft budget's fresh rule, method 4.11):
    those since its detected change where it has one (method 4.14), else the learner's (``learnt``)."""
    since = {} if curator is None else curator.since_changes(experience_ids)
    return [since[e].n if e in since else learnt(e) for e in experience_ids]


def replay(
    config: QuarantineConfig,
    log: Iterable[tuple[str, Mapping[str, Any]]],
    contributions_of: Callable[[str], Mapping[ExperienceId, float]],
    at_plan: Callable[[str, Curator], None] | None = None,
) -> tuple[Curator | None, list[Event]]:
    """The book rebuilt along a log of (kind, payload), ``config`` being the setting in force at the log's
    start: each ``score`` adds its decision's contributions as they are now (``contributions_of``), each
    ``quarantine`` and ``release`` entry is applied where it was written (decisions served stand), and each
    ``settings`` entry that changes the quarantine is applied as the engine applied it (turned on: a fresh
    book; off: none; otherwise the running book under the new setting). ``at_plan`` sees the book as it
    stood at each ``prediction`` entry (decision id, book) while there is one. Returns the book (None when
    the quarantine is off at the log's end) and the quarantines the log lacks (to write now), each with the
    evidence at the settlement that made it, as an engine settled so from the start logged it."""
    curator = Curator(config) if config.enabled else None
    logged: set[ExperienceId] = set()
    fired: dict[ExperienceId, Event] = {}  # each quarantine the replay made, as it was made
    for kind, payload in log:
        if kind == "settings":
            change = payload.get("changes", {}).get("quarantine")
            if change is None:
                continue
            setting = QuarantineConfig.from_dict(change["new"])
            if not setting.enabled:
                curator, fired = None, {}
            elif curator is None:
                curator, logged, fired = Curator(setting), set(), {}
            else:
                curator.config = setting
        elif curator is None:
            continue
        elif kind == "prediction":
            if at_plan is not None:
                at_plan(str(payload["date"]), curator)
        elif kind == "score":
            for event in curator.observe(str(payload["date"]), contributions_of(str(payload["date"]))):
                if event.kind == "quarantine":
                    fired[event.experience_id] = event
        elif kind == "quarantine":
            logged.add(payload["experience_id"])
            if not curator.is_quarantined(payload["experience_id"]):
                curator.force(payload["experience_id"], payload.get("date"))
        elif kind == "release":
            logged.discard(payload["experience_id"])
            fired.pop(payload["experience_id"], None)
            curator.release(payload["experience_id"])
    if curator is None:
        return None, []
    missing = [e for e in curator.quarantined if e not in logged]
    return curator, [
        fired[e] if e in fired else Event("quarantine", e, curator.payload(e, curator.evidence[e].quarantined_at))
        for e in missing
    ]


def setting_at_start(log: Iterable[tuple[str, Mapping[str, Any]]], now: QuarantineConfig) -> QuarantineConfig:
    """The quarantine setting an engine was created with: the old value of the first ``settings`` entry
    that changed it, or ``now`` when none did."""
    for kind, payload in log:
        change = payload.get("changes", {}).get("quarantine") if kind == "settings" else None
        if change is not None:
            return QuarantineConfig.from_dict(change["old"])
    return now
