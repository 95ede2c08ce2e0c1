"""Per-agent FAISS retrieval, kept up to date incrementally.

Each worker keeps one index per agent, keyed by the experiences' sequence
numbers (``experiences.seq``, which only grow). When the agent's
``index_version`` moves (any change to its experiences, by any worker), the
index adds the rows it has not seen yet; it never rebuilds for an addition.
Retired and deleted experiences stay in the index but are dropped from every
result (a search asks for more candidates and keeps the active ones); once
they make up a fifth of the index, it is rebuilt from the active rows.

Below ``APPROXIMATE_FROM`` active experiences the search is exact
(inner product on normalised vectors, ties broken by insertion order); from
there on it is HNSW (M = 32, efSearch = 128), whose recall@4 on the project's
own MiniLM embeddings is measured by ``benchmarks/bench_retrieval.py``
(>= 0.99 at 100,000).
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.cache import DEFAULT_BUDGET, ByteBudget, index_bytes
from service.embeddings import DIMENSION
from service.models import Agent, Experience

__all__ = ["APPROXIMATE_FROM", "AgentIndex", "IndexCache"]

APPROXIMATE_FROM = 20_000
HNSW_M = 32
HNSW_EF_SEARCH = 128
HNSW_EF_CONSTRUCTION = 80
STALE_SHARE = 0.2


def _flat() -> object:
    import faiss

    return faiss.IndexIDMap2(faiss.IndexFlatIP(DIMENSION))


def _hnsw() -> object:
    import faiss

    inner = faiss.IndexHNSWFlat(DIMENSION, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    inner.hnsw.efSearch = HNSW_EF_SEARCH
    inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    return faiss.IndexIDMap2(inner)


@dataclass
class AgentIndex:
    """The index of one agent at ``version``: FAISS ids are experience sequence numbers."""

    version: int = -1
    max_seq: int = 0
    size: int = 0
    approximate: bool = False
    index: object = field(default_factory=_flat)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, seqs: NDArray[np.int64], vectors: NDArray[np.float32]) -> None:
        if seqs.size:
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), seqs.astype(np.int64))  # type: ignore[attr-defined]
            self.size += int(seqs.size)
            self.max_seq = max(self.max_seq, int(seqs.max()))

    def candidates(self, query: NDArray[np.float32], n: int) -> list[tuple[int, float]]:
        """Up to ``n`` (seq, cosine) pairs, best first (retired rows included)."""
        if not self.size:
            return []
        scores, seqs = self.index.search(query.reshape(1, -1).astype(np.float32), min(n, self.size))  # type: ignore[attr-defined]
        return [(int(q), float(s)) for s, q in zip(scores[0], seqs[0], strict=True) if q >= 0]


class IndexCache:
    """Each agent's index, within the worker's cache budget (:mod:`service.cache`): an evicted index is
    rebuilt from the database on the agent's next search."""

    def __init__(self, approximate_from: int = APPROXIMATE_FROM, budget: ByteBudget | None = None) -> None:
        self.approximate_from = approximate_from
        self.budget = budget if budget is not None else ByteBudget(DEFAULT_BUDGET)
        self._lock = threading.Lock()

    def _entry(self, agent_id: str) -> AgentIndex:
        with self._lock:
            entry: AgentIndex | None = self.budget.get("index", agent_id)
            if entry is None:
                entry = AgentIndex()
                self.budget.put("index", agent_id, entry, index_bytes(0, False))
            return entry

    def _sized(self, agent_id: str, entry: AgentIndex) -> None:
        self.budget.resize("index", agent_id, index_bytes(entry.size, entry.approximate))

    def sync(self, session: Session, agent: Agent) -> AgentIndex:
        """The agent's index, brought up to the database's ``index_version``."""
        entry = self._entry(agent.id)
        with entry.lock:
            if entry.version == agent.index_version:
                return entry
            active = (
                session.scalar(
                    select(func.count())
                    .select_from(Experience)
                    .where(Experience.agent_id == agent.id, Experience.active.is_(True))
                )
                or 0
            )
            approximate = active >= self.approximate_from
            if approximate != entry.approximate or (entry.size and entry.size - active > STALE_SHARE * entry.size):
                fresh = AgentIndex(approximate=approximate, index=_hnsw() if approximate else _flat())
                self._fill(session, agent, fresh, only_active=True)
                fresh.version = agent.index_version
                with self._lock:
                    self.budget.put("index", agent.id, fresh, index_bytes(fresh.size, fresh.approximate))
                return fresh
            self._fill(session, agent, entry, only_active=False)
            entry.version = agent.index_version
            self._sized(agent.id, entry)
            return entry

    def _fill(self, session: Session, agent: Agent, entry: AgentIndex, only_active: bool) -> None:
        """Add the agent's rows past ``entry.max_seq``, a page at a time."""
        while True:
            query = select(Experience.seq, Experience.embedding).where(
                Experience.agent_id == agent.id, Experience.seq > entry.max_seq
            )
            if only_active:
                query = query.where(Experience.active.is_(True))
            rows = session.execute(query.order_by(Experience.seq).limit(20_000)).all()
            if not rows:
                return
            seqs = np.array([row.seq for row in rows], dtype=np.int64)
            vectors = np.vstack([np.frombuffer(row.embedding, dtype=np.float32) for row in rows])
            entry.add(seqs, vectors)

    def search(self, session: Session, agent: Agent, query: NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """Top k active experiences (id, cosine similarity); exact ties go to the earlier experience."""
        if k <= 0:
            return []
        entry = self.sync(session, agent)
        want = k + 8
        while True:
            with entry.lock:
                found = entry.candidates(query, max(want, 2 * k))
            if not found:
                return []
            ids = dict(
                session.execute(
                    select(Experience.seq, Experience.id).where(
                        Experience.agent_id == agent.id,
                        Experience.active.is_(True),
                        Experience.seq.in_([q for q, _ in found]),
                    )
                ).all()
            )
            live = [(score, seq) for seq, score in found if seq in ids]
            if len(live) >= k or len(found) >= entry.size:
                live.sort(key=lambda hit: (-round(hit[0], 6), hit[1]))
                return [(ids[seq], score) for score, seq in live[:k]]
            want *= 4  # many of the best are retired: look further

    def search_usable(
        self, session: Session, agent: Agent, query: NDArray[np.float32], k: int, quarantined: Collection[str]
    ) -> list[tuple[str, float]]:
        """Top k experiences retrieval may use (active and not in ``quarantined``), in :meth:`search`'s order."""
        found = self.search(session, agent, query, k + len(quarantined))
        return [(h, score) for h, score in found if h not in quarantined][:k]

    def forget(self, agent_id: str) -> None:
        self.budget.discard("index", agent_id)
