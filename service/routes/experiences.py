"""Experiences: add (one or a batch), list, get, search, update metadata, retire, delete."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from sqlalchemy import func, select

from service.db import transaction
from service.deps import Services, ServicesDep, TenantDep
from service.errors import ApiError
from service.idempotency import Idempotency, IdempotencyKey, serialised
from service.models import Contribution, Experience
from service.pagination import CursorQuery, decode_cursor, encode_cursor
from service.requests import StrictJSONRoute
from service.schemas import (
    ContributionPublic,
    ExperienceDetail,
    ExperienceInput,
    ExperienceList,
    ExperiencePatch,
    ExperiencePublic,
    SearchRequest,
    SearchResult,
)
from service.store import as_utc, load_agent, owned_row, return_engine, save_engine
from service.usecases import experiences
from service.views import experience_public

router = APIRouter(prefix="/v1/agents/{agent_id}/experiences", tags=["experiences"], route_class=StrictJSONRoute)
MAX_OFFSET = 1_000_000_000


@router.post("", status_code=201)
def add_experiences(
    agent_id: str,
    body: ExperienceInput,
    tenant_id: TenantDep,
    services: ServicesDep,
    request: Request,
    key: IdempotencyKey = None,
) -> ExperiencePublic | ExperienceList:
    """Add one experience, or a batch (``{"experiences": [...]}``, at most 256 and 1,000,000 characters of text).

    An item whose ``external_id`` the agent already holds updates that experience (text, metadata) instead
    of adding another; each answered item says ``write``: created, updated or unchanged."""
    return experiences.add(services, tenant_id, agent_id, body, Idempotency(key, tenant_id, request, body))


@router.get("")
def list_experiences(
    agent_id: str,
    tenant_id: TenantDep,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="legacy paging; prefer cursor")] = 0,
    cursor: CursorQuery = None,
    active: bool | None = None,
    external_id: Annotated[
        str | None,
        Query(min_length=1, max_length=200, description="only the experience with this external id"),
    ] = None,
) -> ExperienceList:
    if cursor is not None and offset:
        raise ApiError(422, "invalid", "offset: give a cursor or an offset, not both", "offset")
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        condition = [Experience.agent_id == agent.id]
        if active is not None:
            condition.append(Experience.active.is_(active))
        if external_id is not None:
            condition.append(Experience.external_id == external_id)
        total = session.scalar(select(func.count()).select_from(Experience).where(*condition)) or 0
        if cursor is not None:
            condition.append(Experience.seq > decode_cursor(cursor, "experiences", int))
        rows = session.scalars(
            select(Experience).where(*condition).order_by(Experience.seq).limit(limit + 1).offset(offset)
        ).all()
        engine = services.engines.checkout(session, agent)
        items = [experience_public(row, engine) for row in rows[:limit]]
        return_engine(session, agent, engine, services.engines)
        next_cursor = encode_cursor("experiences", rows[limit - 1].seq) if len(rows) > limit else None
        return ExperienceList(items=items, total=total, limit=limit, offset=offset, next_cursor=next_cursor)


@router.get("/{experience_id}")
def get_experience(agent_id: str, experience_id: str, tenant_id: TenantDep, services: ServicesDep) -> ExperienceDetail:
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        row = owned_row(session, Experience, agent, experience_id, "experience")
        history = session.scalars(
            select(Contribution)
            .where(Contribution.agent_id == agent.id, Contribution.experience_id == row.id)
            .order_by(Contribution.seq)
        ).all()
        engine = services.engines.checkout(session, agent)
        public = experience_public(row, engine)
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


@router.patch("/{experience_id}")
def update_metadata(
    agent_id: str, experience_id: str, body: ExperiencePatch, tenant_id: TenantDep, services: ServicesDep
) -> ExperiencePublic:
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=True)
        row = owned_row(session, Experience, agent, experience_id, "experience")
        row.meta = body.metadata
        session.flush()
        engine = services.engines.checkout(session, agent)
        public = experience_public(row, engine)
        return_engine(session, agent, engine, services.engines)
        serialised(public)
        return public


def _change(
    services: Services, tenant_id: str, agent_id: str, experience_id: str, delete: bool
) -> ExperiencePublic | None:
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=True)
        row = owned_row(session, Experience, agent, experience_id, "experience")
        engine = services.engines.checkout(session, agent)
        if delete:
            engine.remove_experience(row.id)
            session.delete(row)
            public = None
        else:
            engine.retire_experience(row.id)
            row.active = False
            public = experience_public(row, engine)
        agent.index_version += 1
        save_engine(session, agent, engine, services.engines)
        return public


@router.post("/{experience_id}/retire")
def retire_experience(
    agent_id: str, experience_id: str, tenant_id: TenantDep, services: ServicesDep
) -> ExperiencePublic:
    """Stop retrieving an experience; its value and history stay (retiring twice is harmless)."""
    public = _change(services, tenant_id, agent_id, experience_id, delete=False)
    assert public is not None
    return public


@router.delete("/{experience_id}", status_code=204)
def delete_experience(agent_id: str, experience_id: str, tenant_id: TenantDep, services: ServicesDep) -> Response:
    _change(services, tenant_id, agent_id, experience_id, delete=True)
    return Response(status_code=204)


@router.post("/search")
def search_experiences(agent_id: str, body: SearchRequest, tenant_id: TenantDep, services: ServicesDep) -> SearchResult:
    return experiences.search(services, tenant_id, agent_id, body.query, body.k)
