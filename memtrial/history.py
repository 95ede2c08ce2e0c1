"""Where an engine's append-only history lives.

An engine's running state (learner statistics, gate statistics, the
fallback's sums, the log's head) is O(experiences). Everything that grows with
the number of decisions goes to a :class:`History`, one item at a time and
each written once:

- the decision entries (plan, then decision, then settlement; read back by id
  when a decision is decided or settled),
- the hash-chained log entries (predictions and scores),
- the contribution records.

:class:`InMemoryHistory` keeps them in Python lists (the default for a
library user, and what :meth:`~memtrial.engine.MemTrial.to_json` writes out
whole); the service implements the same protocol on database rows, so a
request costs the same after ten decisions or ten thousand.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from memtrial.errors import StateError
from memtrial.prereg import LogEntry
from memtrial.records import Decision, ExperienceId, Plan, Settlement

__all__ = ["DecisionEntry", "DetachedHistory", "History", "InMemoryHistory"]


@dataclass(slots=True)
class DecisionEntry:
    """One decision as far as it has got: its plan, then its decision, then its settlement."""

    plan: Plan
    decision: Decision | None = None
    settlement: Settlement | None = None
    withdrawn: str | None = None  # why a plan was abandoned before any decision
    # outcomes replaced by a correction, oldest first: {"reason", "superseded": the settlement's dict}
    corrections: list[dict[str, Any]] = field(default_factory=list)

    @property
    def decision_id(self) -> str:
        return self.plan.decision_id

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "plan": self.plan.to_dict(),
            "decision": None if self.decision is None else self.decision.to_dict(),
            "settlement": None if self.settlement is None else self.settlement.to_dict(),
        }
        if self.withdrawn is not None:
            data["withdrawn"] = self.withdrawn
        if self.corrections:
            data["corrections"] = list(self.corrections)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DecisionEntry:
        return cls(
            Plan.from_dict(data["plan"]),
            None if data["decision"] is None else Decision.from_dict(data["decision"]),
            None if data["settlement"] is None else Settlement.from_dict(data["settlement"]),
            data.get("withdrawn"),
            list(data.get("corrections", [])),
        )


class History(Protocol):
    """The append-only store an engine writes its history to."""

    def get(self, decision_id: str) -> DecisionEntry | None:
        """The entry of a decision, or None when no plan has this id."""

    def put(self, entry: DecisionEntry) -> None:
        """Store an entry after plan, decide or settle (the same entry, further along)."""

    def append_log(self, entry: LogEntry) -> None:
        """Append one hash-chained log entry (entries arrive in index order)."""

    def append_contributions(
        self, decision_id: str, contributions: Mapping[ExperienceId, float], centred: Mapping[ExperienceId, float]
    ) -> None:
        """Append the contribution records of one settled decision (raw and date-centred)."""

    def log_entries(self) -> Iterable[LogEntry]:
        """Every log entry, in index order (for verification)."""

    def entries_in_order(self) -> Iterable[DecisionEntry]:
        """Every decision entry, in the order the decisions were planned (to recompute the state after a correction)."""

    def correct(
        self, entry: DecisionEntry, contributions: Mapping[ExperienceId, float], centred: Mapping[ExperienceId, float]
    ) -> None:
        """Store an entry whose settlement a correction replaced, and replace its contribution records."""


class InMemoryHistory:
    """The history in Python containers (entries by id, the log, the records)."""

    def __init__(self) -> None:
        self.entries: dict[str, DecisionEntry] = {}
        self.log: list[LogEntry] = []
        self.records: list[tuple[str, ExperienceId, float]] = []

    def get(self, decision_id: str) -> DecisionEntry | None:
        return self.entries.get(decision_id)

    def put(self, entry: DecisionEntry) -> None:
        self.entries[entry.decision_id] = entry

    def append_log(self, entry: LogEntry) -> None:
        if entry.index != len(self.log):
            raise StateError(f"log entry {entry.index} arrived after {len(self.log)} entries", field="log")
        self.log.append(entry)

    def append_contributions(
        self, decision_id: str, contributions: Mapping[ExperienceId, float], centred: Mapping[ExperienceId, float]
    ) -> None:
        self.records.extend((decision_id, e, float(c)) for e, c in contributions.items())

    def log_entries(self) -> Iterator[LogEntry]:
        return iter(self.log)

    def entries_in_order(self) -> Iterator[DecisionEntry]:
        return iter(list(self.entries.values()))

    def correct(
        self, entry: DecisionEntry, contributions: Mapping[ExperienceId, float], centred: Mapping[ExperienceId, float]
    ) -> None:
        self.entries[entry.decision_id] = entry
        self.records = [record for record in self.records if record[0] != entry.decision_id]
        self.records.extend((entry.decision_id, e, float(c)) for e, c in contributions.items())

    def prune_settled(self) -> int:
        """Drop settled entries (their learning stays in the engine); returns how many."""
        settled = [decision_id for decision_id, entry in self.entries.items() if entry.settlement is not None]
        for decision_id in settled:
            del self.entries[decision_id]
        return len(settled)

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": [entry.to_dict() for entry in self.entries.values()],
            "log": [entry.to_dict() for entry in self.log],
            "records": [list(record) for record in self.records],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InMemoryHistory:
        history = cls()
        for item in data["entries"]:
            history.put(DecisionEntry.from_dict(item))
        history.log = [LogEntry.from_dict(item) for item in data["log"]]
        history.records = [(str(d), e, float(c)) for d, e, c in data["records"]]
        return history


class DetachedHistory:
    """Stands in for an external store that is not attached: every use is an error.

    An engine restored from a compact state (``history=False``) carries this
    until its owner attaches the store that holds its history.
    """

    def _fail(self) -> StateError:
        return StateError(
            "this engine's history lives in an external store that is not attached: set engine.history", field="history"
        )

    def get(self, decision_id: str) -> DecisionEntry | None:
        raise self._fail()

    def put(self, entry: DecisionEntry) -> None:
        raise self._fail()

    def append_log(self, entry: LogEntry) -> None:
        raise self._fail()

    def append_contributions(
        self, decision_id: str, contributions: Mapping[ExperienceId, float], centred: Mapping[ExperienceId, float]
    ) -> None:
        raise self._fail()

    def log_entries(self) -> Iterable[LogEntry]:
        raise self._fail()

    def entries_in_order(self) -> Iterable[DecisionEntry]:
        raise self._fail()

    def correct(
        self, entry: DecisionEntry, contributions: Mapping[ExperienceId, float], centred: Mapping[ExperienceId, float]
    ) -> None:
        raise self._fail()
