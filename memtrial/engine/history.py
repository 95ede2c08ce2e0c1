"""Where an engine's append-only history lives.

An engine's running state (learner statistics, gate statistics, the
fallback's sums, the log's head) is O(experiences). Everything that grows with
the number of decisions goes to a :class:`History`, one item at a time and
each written once:

- the decision entries (plan, then decision, then settlement; read back by id
  when a decision is decided or settled),
- the hash-chained log entries (predictions and scores),
- the contribution records,
- the state checkpoints a correction replays from (:mod:`memtrial.engine.checkpoints`;
  the newest few, rewritten by corrections).

:class:`InMemoryHistory` keeps them in Python lists (the default for a
library user, and what :meth:`~memtrial.engine.lifecycle.MemTrial.to_json` writes out
whole); the service implements the same protocol on database rows, so a
request costs the same after ten decisions or ten thousand.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from memtrial.engine.checkpoints import Checkpoint
from memtrial.errors import StateError
from memtrial.records import Decision, ExperienceId, Plan, Settlement
from memtrial.trust.log import LogEntry, LogKind

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

    def rescore(self, scores: Mapping[str, float | None]) -> None:
        """Store the gate scores a correction's replay changed, in the settled decisions' settlements (the
        correction's log entry lists the same)."""

    def log_events(self, start: int = 0) -> Iterable[tuple[int, str, str]]:
        """(index, kind, decision id) of every log entry from index ``start``, in order (what a replay reads)."""

    def score_index(self, decision_id: str) -> int | None:
        """The index of the decision's score entry, or None when the log holds none."""

    def entries_of(self, decision_ids: Iterable[str]) -> dict[str, DecisionEntry]:
        """The entries of these decisions, by id, with their plans and settlements (what a correction's
        replay reads; a store may leave their decisions out). Ids without a plan are left out."""

    def checkpoint_at_or_before(self, position: int) -> Checkpoint | None:
        """The newest checkpoint whose position is at most ``position``."""

    def drop_checkpoints_after(self, position: int) -> None:
        """Forget the checkpoints past ``position`` (a correction there made them stale)."""

    def add_checkpoints(self, checkpoints: Sequence[Checkpoint], kept: int) -> None:
        """Store checkpoints (positions past every stored one) and keep only the newest ``kept``."""


#: The methods a history store has (what :class:`~memtrial.engine.lifecycle.MemTrial` checks a given one for).
HISTORY_METHODS = tuple(name for name, member in vars(History).items() if not name.startswith("_") and callable(member))


class InMemoryHistory:
    """The history in Python containers (entries by id, the log, the records)."""

    def __init__(self) -> None:
        self.entries: dict[str, DecisionEntry] = {}
        self.log: list[LogEntry] = []
        self.records: list[tuple[str, ExperienceId, float]] = []
        self.checkpoints: list[Checkpoint] = []
        # where each decision's score entry and contribution records are, indexed as far as read
        self._scores: dict[str, int] = {}
        self._scores_read = 0
        self._dated: set[str] = set()  # the decisions the log has entries of (pruned ones included)
        self._dated_read = 0
        self._records_of: dict[str, tuple[int, int]] = {}
        self._records_read = 0

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
        replacing = [(entry.decision_id, e, float(c)) for e, c in contributions.items()]
        self._index_records()
        start, count = self._records_of.get(entry.decision_id, (len(self.records), 0))
        if count == len(replacing) and all(r[0] == entry.decision_id for r in self.records[start : start + count]):
            self.records[start : start + count] = replacing  # in place: the same experiences, new contributions
            return
        self.records = [record for record in self.records if record[0] != entry.decision_id]
        self.records.extend(replacing)
        self._records_of, self._records_read = {}, 0

    def rescore(self, scores: Mapping[str, float | None]) -> None:
        for decision_id, score in scores.items():
            entry = self.entries[decision_id]
            assert entry.settlement is not None, "a scored decision is settled"
            entry.settlement = replace(entry.settlement, score=score)

    def _index_records(self) -> None:
        """Index the records appended since the last call (one decision's records are contiguous)."""
        for position in range(self._records_read, len(self.records)):
            decision_id = self.records[position][0]
            start, count = self._records_of.get(decision_id, (position, 0))
            self._records_of[decision_id] = (start, count + 1)
        self._records_read = len(self.records)

    def log_events(self, start: int = 0) -> Iterator[tuple[int, str, str]]:
        return ((entry.index, entry.kind, str(entry.payload.get("date"))) for entry in self.log[start:])

    def score_index(self, decision_id: str) -> int | None:
        for entry in self.log[self._scores_read :]:
            if entry.kind == LogKind.SCORE:
                self._scores.setdefault(str(entry.payload.get("date")), entry.index)
        self._scores_read = len(self.log)
        return self._scores.get(decision_id)

    def entries_of(self, decision_ids: Iterable[str]) -> dict[str, DecisionEntry]:
        return {d: self.entries[d] for d in decision_ids if d in self.entries}

    def checkpoint_at_or_before(self, position: int) -> Checkpoint | None:
        return next((c for c in reversed(self.checkpoints) if c.position <= position), None)

    def drop_checkpoints_after(self, position: int) -> None:
        self.checkpoints = [c for c in self.checkpoints if c.position <= position]

    def add_checkpoints(self, checkpoints: Sequence[Checkpoint], kept: int) -> None:
        self.checkpoints = [*self.checkpoints, *checkpoints][-kept:]

    def pruned(self, decision_id: str) -> bool:
        """Whether ``decision_id`` was planned here and its entry pruned since (its log entries stay)."""
        for entry in self.log[self._dated_read :]:
            self._dated.add(str(entry.payload.get("date")))
        self._dated_read = len(self.log)
        return decision_id not in self.entries and decision_id in self._dated

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
            "checkpoints": [checkpoint.to_dict() for checkpoint in self.checkpoints],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InMemoryHistory:
        history = cls()
        for item in data["entries"]:
            history.put(DecisionEntry.from_dict(item))
        history.log = [LogEntry.from_dict(item) for item in data["log"]]
        history.records = [(str(d), e, float(c)) for d, e, c in data["records"]]
        history.checkpoints = [Checkpoint.from_dict(item) for item in data.get("checkpoints", [])]
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

    def rescore(self, scores: Mapping[str, float | None]) -> None:
        raise self._fail()

    def log_events(self, start: int = 0) -> Iterable[tuple[int, str, str]]:
        raise self._fail()

    def score_index(self, decision_id: str) -> int | None:
        raise self._fail()

    def entries_of(self, decision_ids: Iterable[str]) -> dict[str, DecisionEntry]:
        raise self._fail()

    def checkpoint_at_or_before(self, position: int) -> Checkpoint | None:
        raise self._fail()

    def drop_checkpoints_after(self, position: int) -> None:
        raise self._fail()

    def add_checkpoints(self, checkpoints: Sequence[Checkpoint], kept: int) -> None:
        raise self._fail()
