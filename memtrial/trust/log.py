"""Pre-registration and the hash-chained prediction log.

Every prediction and score is appended to a :class:`PredictionLog`. Each
entry carries the SHA-256 hash of its predecessor (the first one carries the
hash of the frozen gate configuration), and its own hash covers its index,
kind, payload and that predecessor hash, so any later edit, insertion,
deletion or reordering is caught by :func:`verify_chain`.

A log keeps only its head (the last hash and the number of entries) as state.
Each new entry goes to a *sink*: by default the log's own in-memory list, or
any external append-only store (the service writes one database row per
entry), so the cost of appending does not grow with the log's length.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from memtrial.errors import InputError, StateError

__all__ = ["ChainVerification", "LogEntry", "LogKind", "PredictionLog", "canonical_json", "sha256_hex", "verify_chain"]


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, no spaces and exact float text; NaN and inf are refused."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise InputError(f"value is not canonical-JSON serialisable: {error}") from None


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class LogKind(StrEnum):
    """The kinds of entry in the hash-chained log, defined once: the core writes them, the service and
    the backtests read them. A kind's value is what the chain hashes: never change one."""

    PREDICTION = "prediction"  # a trial's frozen predictions, registered before its outcome
    SCORE = "score"  # a trial's prequential score, when it settles
    CORRECTION = "correction"  # a settled outcome replaced (method 4.10)
    EXPLOIT = "exploit"  # a budget's plan that predicts nothing (exploiting, or without experiences): its calls (4.11)
    SETTINGS = "settings"  # settings changed mid-life
    RETRY = "retry"  # retries of malformed answers paid from a budget
    WITHDRAWAL = "withdrawal"  # a plan withdrawn before its decision
    QUARANTINE = "quarantine"  # an experience credibly harmful, kept out of retrieval (method 4.13)
    RELEASE = "release"  # a quarantined experience released by hand (method 4.13)


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One append-only record: a registered prediction or a score."""

    index: int
    kind: str
    payload: Mapping[str, Any]
    prev_hash: str
    hash: str

    def expected_hash(self) -> str:
        body = {"index": self.index, "kind": self.kind, "payload": self.payload, "prev_hash": self.prev_hash}
        return sha256_hex(canonical_json(body))

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "kind": self.kind,
            "payload": self.payload,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }

    @classmethod
    def from_dict(cls, item: Mapping[str, Any]) -> LogEntry:
        try:
            return cls(
                int(item["index"]), str(item["kind"]), item["payload"], str(item["prev_hash"]), str(item["hash"])
            )
        except (KeyError, TypeError, ValueError) as error:
            raise StateError(f"prediction log entry is malformed: {error!r}", field="log") from None


@dataclass(frozen=True, slots=True)
class ChainVerification:
    """Result of recomputing the chain: ``ok`` or the first entry that fails and why."""

    ok: bool
    n_entries: int
    first_invalid: int | None = None
    reason: str | None = None


def verify_chain(
    genesis: str, entries: Iterable[LogEntry], start: int = 0, previous: str | None = None
) -> ChainVerification:
    """Recompute the chain of ``entries`` (streamed, in index order) from ``genesis``.

    ``start``/``previous`` resume a verification at entry ``start`` whose
    predecessor's hash is ``previous`` (for logs verified page by page).
    """
    expected_previous = genesis if previous is None else previous
    position = start
    for entry in entries:
        if entry.index != position:
            return ChainVerification(False, position + 1, position, f"entry {position} has index {entry.index}")
        if entry.prev_hash != expected_previous:
            return ChainVerification(
                False, position + 1, position, f"entry {position} does not link to its predecessor"
            )
        if entry.hash != entry.expected_hash():
            return ChainVerification(
                False, position + 1, position, f"entry {position} was modified after it was written"
            )
        expected_previous = entry.hash
        position += 1
    return ChainVerification(True, position)


class PredictionLog:
    """Append-only, hash-chained log anchored at ``genesis``.

    State is the head: ``length`` entries so far and the ``head`` hash. With
    no ``sink`` the entries are kept in :attr:`entries`; with a sink each new
    entry is handed to it and not kept here.
    """

    def __init__(
        self,
        genesis: str,
        entries: Sequence[LogEntry] = (),
        *,
        sink: Callable[[LogEntry], None] | None = None,
        length: int | None = None,
        head: str | None = None,
    ) -> None:
        self.genesis = genesis
        self.entries: list[LogEntry] = list(entries)
        self.sink = sink
        self.length = len(self.entries) if length is None else length
        self._head = (self.entries[-1].hash if self.entries else genesis) if head is None else head

    @property
    def head(self) -> str:
        """Hash of the last entry (the genesis hash when empty)."""
        return self._head

    def append(self, kind: LogKind, payload: Mapping[str, Any]) -> LogEntry:
        value = LogKind(kind).value
        frozen = json.loads(canonical_json(payload))
        draft = LogEntry(self.length, value, frozen, self._head, "")
        entry = LogEntry(draft.index, value, frozen, draft.prev_hash, draft.expected_hash())
        if self.sink is None:
            self.entries.append(entry)
        else:
            self.sink(entry)
        self.length += 1
        self._head = entry.hash
        return entry

    def verify(self) -> ChainVerification:
        """Verify the entries kept in memory (a log with a sink is verified where its entries are)."""
        if self.sink is not None:
            raise StateError(
                "this log hands its entries to an external store: verify them there with verify_chain", field="log"
            )
        check = verify_chain(self.genesis, self.entries)
        if check.ok and check.n_entries == self.length and (not self.entries or self.entries[-1].hash == self._head):
            return check
        if check.ok:
            return ChainVerification(
                False,
                len(self.entries),
                len(self.entries),
                f"the log holds {len(self.entries)} entries but its head counts {self.length}",
            )
        return check

    def to_list(self) -> list[dict[str, Any]]:
        return [entry.to_dict() for entry in self.entries]

    @classmethod
    def from_list(cls, genesis: str, items: Sequence[Mapping[str, Any]]) -> PredictionLog:
        return cls(genesis, [LogEntry.from_dict(item) for item in items])
