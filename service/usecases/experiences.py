"""Experience use cases: adding one experience or a batch (embedded outside the agent's lock)."""

from __future__ import annotations

from service.db import transaction
from service.deps import Services
from service.idempotency import Idempotency
from service.models import Experience
from service.schemas import ExperienceBatch, ExperienceCreate, ExperienceList, ExperiencePublic
from service.store import load_agent, save_engine
from service.usecases.unit import agent_write, check_replay
from service.views import experience_public

__all__ = ["add"]


def add(
    services: Services, tenant_id: str, agent_id: str, body: ExperienceCreate | ExperienceBatch, guard: Idempotency
) -> ExperiencePublic | ExperienceList:
    """Add one experience, or a batch: the texts are embedded before the agent is locked."""
    items = body.experiences if isinstance(body, ExperienceBatch) else [body]
    with transaction(services.sessions) as session:
        load_agent(session, tenant_id, agent_id, lock=False)  # 404 before any embedding work
        check_replay(session, guard)
    vectors = services.embedder.encode([item.text for item in items])
    with agent_write(services, tenant_id, agent_id, guard) as (session, agent):
        engine = services.engines.checkout(session, agent)
        rows = [
            Experience(
                agent_id=agent.id,
                text=item.text,
                meta=item.metadata,
                structured=item.structured,
                embedding=vector.tobytes(),
            )
            for item, vector in zip(items, vectors, strict=True)
        ]
        session.add_all(rows)
        session.flush()
        for row, vector in zip(rows, vectors, strict=True):
            engine.add_experience(row.id, vector)
        agent.index_version += 1
        save_engine(session, agent, engine, services.engines)
        public = [experience_public(row, engine) for row in rows]
        answer: ExperiencePublic | ExperienceList = (
            ExperienceList(items=public, total=len(public), limit=len(public), offset=0)
            if isinstance(body, ExperienceBatch)
            else public[0]
        )
        guard.complete(201, answer)
        return answer
