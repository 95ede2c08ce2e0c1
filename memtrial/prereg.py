"""Pre-registration and the hash-chained prediction log.

Every prediction and score is appended to a :class:`PredictionLog`. Each
entry carries the SHA-256 hash of its predecessor (the first one carries the
hash of the frozen gate configuration), and its own hash covers its index,
kind, payload and that predecessor hash, so any later edit, insertion,
deletion or reordering is caught by :meth:`PredictionLog.verify`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memtrial.errors import InputError, StateError

__all__ = ["ChainVerification", "LogEntry", "PredictionLog", "canonical_json", "sha256_hex"]


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, no spaces and exact float text; NaN and inf are refused."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise InputError(f"value is not canonical-JSON serialisable: {error}") from None


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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


@dataclass(frozen=True, slots=True)
class ChainVerification:
    """Result of recomputing the chain: ``ok`` or the first entry that fails and why."""

    ok: bool
    n_entries: int
    first_invalid: int | None = None
    reason: str | None = None


class PredictionLog:
    """Append-only, hash-chained list of entries anchored at ``genesis``."""

    def __init__(self, genesis: str, entries: Sequence[LogEntry] = ()) -> None:
        self.genesis = genesis
        self.entries: list[LogEntry] = list(entries)

    @property
    def head(self) -> str:
        """Hash of the last entry (the genesis hash when empty)."""
        return self.entries[-1].hash if self.entries else self.genesis

    def append(self, kind: str, payload: Mapping[str, Any]) -> LogEntry:
        frozen = json.loads(canonical_json(payload))
        draft = LogEntry(len(self.entries), kind, frozen, self.head, "")
        entry = LogEntry(draft.index, kind, frozen, draft.prev_hash, draft.expected_hash())
        self.entries.append(entry)
        return entry

    def verify(self) -> ChainVerification:
        previous = self.genesis
        for position, entry in enumerate(self.entries):
            if entry.index != position:
                return ChainVerification(False, len(self.entries), position, f"entry {position} has index {entry.index}")
            if entry.prev_hash != previous:
                return ChainVerification(False, len(self.entries), position, f"entry {position} does not link to its predecessor")
            if entry.hash != entry.expected_hash():
                return ChainVerification(False, len(self.entries), position, f"entry {position} was modified after it was written")
            previous = entry.hash
        return ChainVerification(True, len(self.entries))

    def to_list(self) -> list[dict[str, Any]]:
        return [entry.to_dict() for entry in self.entries]

    @classmethod
    def from_list(cls, genesis: str, items: Sequence[Mapping[str, Any]]) -> PredictionLog:
        try:
            entries = [
                LogEntry(int(item["index"]), str(item["kind"]), item["payload"], str(item["prev_hash"]), str(item["hash"]))
                for item in items
            ]
        except (KeyError, TypeError, ValueError) as error:
            raise StateError(f"prediction log entry is malformed: {error!r}", field="log") from None
        return cls(genesis, entries)
