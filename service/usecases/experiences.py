"""Experience use cases: add one or a batch (embedded outside the agent's lock), list, read, search,
update metadata, retire, delete.

An item with an ``external_id`` this agent already holds updates that
experience instead of adding a second one: a new text is embedded again and
the experience keeps its id, its contributions and its value (the row is
written anew, so every worker's index picks up the new embedding as it picks
up an addition); the answer says ``created``, ``updated`` or ``unchanged``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.db import transaction
from service.deps import Services
from service.errors import ApiError
from service.idempotency import Idempotency, serialised
from service.models import Contribution, Experience
from service.modes import ExperienceStatus
from service.pagination import decode_cursor, encode_cursor
from service.schemas import (
    ContributionPublic,
    ExperienceBatch,
    ExperienceCreate,
    ExperienceDetail,
    ExperienceList,
    ExperiencePublic,
    SearchHit,
    SearchResult,
)
from service.store import as_utc, load_agent, owned_row, return_engine, save_engine
from service.tracing import span
from service.usecases.curation import quarantine_evidence
from service.usecases.unit import agent_write, check_replay
from service.views import experience_public

__all__ = ["add", "change", "detail", "list_page", "search", "update_metadata"]


def _row(agent_id: str, item: ExperienceCreate, vector: NDArray[np.float32], **kept: Any) -> Experience:
    """The row of an item (``kept``: the id, state and creation time of the experience it rewrites)."""
    return Experience(
        agent_id=agent_id,
        external_id=item.external_id,
        text=item.text,
        meta=item.metadata,
        structured=item.structured,
        embedding=vector.tobytes(),
        **kept,
    )


def _held_texts(session: Session, agent_id: str, items: list[ExperienceCreate]) -> dict[str, str]:
    """The texts this agent holds for the items' external ids."""
    external = [item.external_id for item in items if item.external_id is not None]
    if not external:
        return {}
    rows = session.execute(
        select(Experience.external_id, Experience.text).where(
            Experience.agent_id == agent_id, Experience.external_id.in_(external)
        )
    ).all()
    return {str(row.external_id): row.text for row in rows}


def add(
    services: Services, tenant_id: str, agent_id: str, body: ExperienceCreate | ExperienceBatch, guard: Idempotency
) -> ExperiencePublic | ExperienceList:
    """Add one experience, or a batch: the texts are embedded before the agent is locked."""
    items = body.experiences if isinstance(body, ExperienceBatch) else [body]
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)  # 404 before any embedding work
        check_replay(session, guard)
        held = _held_texts(session, agent.id, items)
    # a mirror re-sends what it holds: texts an external id already has are not embedded again
    fresh = [i for i, item in enumerate(items) if item.external_id is None or held.get(item.external_id) != item.text]
    with span("embedding.encode", texts=len(fresh)):
        encoded: list[NDArray[np.float32]] = (
            list(services.embedder.encode([items[i].text for i in fresh])) if fresh else []
        )
    vectors: list[NDArray[np.float32] | None] = [None] * len(items)
    for i, encoding in zip(fresh, encoded, strict=True):
        vectors[i] = encoding
    with agent_write(services, tenant_id, agent_id, guard) as (session, agent):
        engine = services.engines.checkout(session, agent)
        external = [item.external_id for item in items if item.external_id is not None]
        existing = {
            row.external_id: row
            for row in session.scalars(
                select(Experience).where(Experience.agent_id == agent.id, Experience.external_id.in_(external))
            )
        }
        rows: list[Experience] = []
        writes: list[str] = []
        index_changed = False
        for index, item in enumerate(items):
            old = existing.get(item.external_id) if item.external_id is not None else None
            vector = vectors[index]
            if vector is None and (old is None or old.text != item.text):  # its text changed meanwhile
                vector = vectors[index] = services.embedder.encode([item.text])[0]
            if old is None:
                assert vector is not None
                rows.append(_row(agent.id, item, vector))
                writes.append("created")
                index_changed = True
            elif old.text == item.text:
                changed = old.meta != item.metadata or old.structured != item.structured
                old.meta, old.structured = item.metadata, item.structured
                rows.append(old)
                writes.append("updated" if changed else "unchanged")
            else:
                # a new text: the row is written anew (a new sequence number), so every worker's index adds
                # its new embedding and drops the old one, as for any addition and removal
                session.delete(old)
                session.flush()
                assert vector is not None
                rows.append(_row(agent.id, item, vector, id=old.id, active=old.active, created_at=old.created_at))
                writes.append("updated")
                engine.update_experience(old.id, vector)
                index_changed = True
        session.add_all(rows)
        session.flush()
        for row, embedding, write in zip(rows, vectors, writes, strict=True):
            if write == "created":
                engine.add_experience(row.id, embedding)
        if index_changed:
            agent.index_version += 1
        save_engine(session, agent, engine, services.engines)
        evidence = quarantine_evidence(session, agent.id, [r.id for r in rows if r.id in engine.quarantined])
        public = [
            experience_public(row, engine, evidence).model_copy(update={"write": write})
            for row, write in zip(rows, writes, strict=True)
        ]
        answer: ExperiencePublic | ExperienceList = (
            ExperienceList(items=public, total=len(public), limit=len(public), offset=0)
            if isinstance(body, ExperienceBatch)
            else public[0]
        )
        guard.complete(201, answer)
        return answer


def search(services: Services, tenant_id: str, agent_id: str, query: str, k: int) -> SearchResult:
    """The k experiences closest to ``query`` (cosine) among those retrieval may use (active, not in quarantine),
    best first, with their texts and external ids."""
    with span("embedding.encode", texts=1):
        vector = services.embedder.encode([query])[0]
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        engine = services.engines.checkout(session, agent)
        quarantined = {str(e) for e in engine.quarantined}
        return_engine(session, agent, engine, services.engines)
        with span("retrieval.search", k=k + len(quarantined)):
            hits = services.indexes.search_usable(session, agent, vector, k, quarantined)
        rows = session.execute(
            select(Experience.id, Experience.text, Experience.external_id).where(
                Experience.id.in_([h for h, _ in hits])
            )
        ).all()
        found = {row.id: row for row in rows}
        return SearchResult(
            hits=[SearchHit(id=h, text=found[h].text, score=s, external_id=found[h].external_id) for h, s in hits]
        )


def list_page(
    services: Services,
    tenant_id: str,
    agent_id: str,
    limit: int,
    offset: int,
    cursor: str | None,
    active: bool | None,
    external_id: str | None,
    status: ExperienceStatus | None = None,
) -> ExperienceList:
    """A page of the agent's experiences in insertion order, filtered by state, status and external id."""
    if cursor is not None and offset:
        raise ApiError(422, "invalid", "offset: give a cursor or an offset, not both", "offset")
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        engine = services.engines.checkout(session, agent)
        quarantined = [str(e) for e in engine.quarantined]
        condition = [Experience.agent_id == agent.id]
        if active is not None:
            condition.append(Experience.active.is_(active))
        if external_id is not None:
            condition.append(Experience.external_id == external_id)
        if status is ExperienceStatus.RETIRED:
            condition.append(Experience.active.is_(False))
        elif status is ExperienceStatus.QUARANTINED:
            condition += [Experience.active.is_(True), Experience.id.in_(quarantined)]
        elif status is ExperienceStatus.ACTIVE:
            condition += [Experience.active.is_(True), Experience.id.not_in(quarantined)]
        total = session.scalar(select(func.count()).select_from(Experience).where(*condition)) or 0
        scope = (agent.id, active, external_id, None if status is None else status.value)
        if cursor is not None:
            condition.append(Experience.seq > decode_cursor(cursor, "experiences", int, scope))
        rows = session.scalars(
            select(Experience).where(*condition).order_by(Experience.seq).limit(limit + 1).offset(offset)
        ).all()
        evidence = quarantine_evidence(session, agent.id, [r.id for r in rows[:limit] if r.id in quarantined])
        items = [experience_public(row, engine, evidence) for row in rows[:limit]]
        return_engine(session, agent, engine, services.engines)
        next_cursor = encode_cursor("experiences", rows[limit - 1].seq, scope) if len(rows) > limit else None
        return ExperienceList(items=items, total=total, limit=limit, offset=offset, next_cursor=next_cursor)


def detail(services: Services, tenant_id: str, agent_id: str, experience_id: str) -> ExperienceDetail:
    """One experience with its value and every contribution it was credited with."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        row = owned_row(session, Experience, agent, experience_id, "experience")
        history = session.scalars(
            select(Contribution)
            .where(Contribution.agent_id == agent.id, Contribution.experience_id == row.id)
            .order_by(Contribution.seq)
        ).all()
        engine = services.engines.checkout(session, agent)
        public = experience_public(row, engine, quarantine_evidence(session, agent.id, [row.id]))
        return_engine(session, agent, engine, services.engines)
        contributions = [
            ContributionPublic(
                decision_id=c.decision_id,
                decision_time=as_utc(c.decision_time),
                contribution=c.contribution,
                centred=c.centred,
            )
            for c in history
        ]
        return ExperienceDetail(**public.model_dump(), contributions=contributions)


def update_metadata(
    services: Services, tenant_id: str, agent_id: str, experience_id: str, metadata: dict[str, Any]
) -> ExperiencePublic:
    """Replace an experience's metadata."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=True)
        row = owned_row(session, Experience, agent, experience_id, "experience")
        row.meta = metadata
        session.flush()
        engine = services.engines.checkout(session, agent)
        public = experience_public(row, engine, quarantine_evidence(session, agent.id, [row.id]))
        return_engine(session, agent, engine, services.engines)
        serialised(public)
        return public


def change(
    services: Services, tenant_id: str, agent_id: str, experience_id: str, delete: bool
) -> ExperiencePublic | None:
    """Retire an experience (kept, never retrieved) or delete it (forgotten)."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=True)
        row = owned_row(session, Experience, agent, experience_id, "experience")
        engine = services.engines.checkout(session, agent)
        if delete and row.id in engine.quarantined:  # deleted, then added again, it would leave unlogged
            return_engine(session, agent, engine, services.engines)
            raise ApiError(
                409,
                "quarantined",
                f"experience {row.id!r} is quarantined: release it (a logged release) or retire it before "
                "deleting it; deleted, an experience added again under its external id would leave the "
                "quarantine without an entry in the log",
                "experience_id",
            )
        if delete and engine.curator is not None and engine.curator.is_quarantined(row.id):
            # retired while quarantined: the deletion ends its quarantine in the log (a release naming why)
            engine.release(row.id, "deleted after it was retired in quarantine", deleting=True)
        if delete:
            engine.remove_experience(row.id)
            session.delete(row)
            public = None
        else:
            engine.retire_experience(row.id)
            row.active = False
            public = experience_public(row, engine, quarantine_evidence(session, agent.id, [row.id]))
        agent.index_version += 1
        save_engine(session, agent, engine, services.engines)
        return public
