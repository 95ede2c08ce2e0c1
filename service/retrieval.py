"""FAISS retrieval per agent, rebuilt from the database when its index version moves.

Each worker process keeps its own indexes; an agent's ``index_version`` in the
database is bumped by every change to its experiences, so a worker notices a
change made by another worker on its next request and rebuilds.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.embeddings import DIMENSION
from service.models import Agent, Experience

__all__ = ["AgentIndex", "IndexCache"]


@dataclass(frozen=True, slots=True)
class AgentIndex:
    version: int
    ids: tuple[str, ...]
    index: object

    def search(self, query: NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """Top k (id, cosine similarity), ties broken by insertion order."""
        if not self.ids or k <= 0:
            return []
        n = min(len(self.ids), max(k * 2, k + 8))
        scores, positions = self.index.search(query.reshape(1, -1), n)  # type: ignore[attr-defined]
        hits = [(float(s), int(p)) for s, p in zip(scores[0], positions[0], strict=True) if p >= 0]
        hits.sort(key=lambda hit: (-round(hit[0], 6), hit[1]))
        return [(self.ids[p], s) for s, p in hits[:k]]


class IndexCache:
    def __init__(self) -> None:
        self._indexes: dict[str, AgentIndex] = {}
        self._lock = threading.Lock()

    def get(self, session: Session, agent: Agent) -> AgentIndex:
        with self._lock:
            cached = self._indexes.get(agent.id)
        if cached is not None and cached.version == agent.index_version:
            return cached
        import faiss

        rows = session.execute(
            select(Experience.id, Experience.embedding).where(Experience.agent_id == agent.id, Experience.active.is_(True)).order_by(Experience.seq)
        ).all()
        index = faiss.IndexFlatIP(DIMENSION)
        if rows:
            index.add(np.vstack([np.frombuffer(row.embedding, dtype=np.float32) for row in rows]))
        built = AgentIndex(agent.index_version, tuple(row.id for row in rows), index)
        with self._lock:
            self._indexes[agent.id] = built
        return built

    def forget(self, agent_id: str) -> None:
        with self._lock:
            self._indexes.pop(agent_id, None)
