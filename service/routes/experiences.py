"""Experiences: add (one or a batch), list, get, search, rank, update metadata, retire, release, delete."""

from __future__ import annotations

import unicodedata
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from service.deps import ServicesDep, TenantDep
from service.idempotency import Idempotency, IdempotencyKey
from service.modes import Listed
from service.pagination import CursorQuery
from service.requests import StrictJSONRoute
from service.schemas import (
    ExperienceDetail,
    ExperienceInput,
    ExperienceList,
    ExperiencePatch,
    ExperiencePublic,
    ExperienceStatus,
    RankRequest,
    RankResult,
    ReleaseRequest,
    SearchRequest,
    SearchResult,
)
from service.usecases import curation, experiences

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
    status: Annotated[
        Listed[ExperienceStatus] | None,
        Query(
            description="only experiences in this state: active (retrieved), quarantined (kept out of retrieval by their evidence) or retired"
        ),
    ] = None,
    external_id: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=200,
            pattern=r"^[^\x00]+$",  # PostgreSQL's text holds no NUL: the query failed with a 500
            description="only the experience with this external id (compared in Unicode normal form C)",
        ),
    ] = None,
) -> ExperienceList:
    """A page of the agent's experiences in insertion order; each says its ``status``, and a quarantined one
    the evidence it was quarantined on (``quarantine``)."""
    wanted = None if external_id is None else unicodedata.normalize("NFC", external_id)
    return experiences.list_page(services, tenant_id, agent_id, limit, offset, cursor, active, wanted, status)


@router.get("/{experience_id}")
def get_experience(agent_id: str, experience_id: str, tenant_id: TenantDep, services: ServicesDep) -> ExperienceDetail:
    return experiences.detail(services, tenant_id, agent_id, experience_id)


@router.patch("/{experience_id}")
def update_metadata(
    agent_id: str, experience_id: str, body: ExperiencePatch, tenant_id: TenantDep, services: ServicesDep
) -> ExperiencePublic:
    return experiences.update_metadata(services, tenant_id, agent_id, experience_id, body.metadata)


@router.post("/{experience_id}/retire")
def retire_experience(
    agent_id: str, experience_id: str, tenant_id: TenantDep, services: ServicesDep
) -> ExperiencePublic:
    """Stop retrieving an experience; its value and history stay (retiring twice is harmless)."""
    public = experiences.change(services, tenant_id, agent_id, experience_id, delete=False)
    assert public is not None
    return public


@router.delete("/{experience_id}", status_code=204)
def delete_experience(agent_id: str, experience_id: str, tenant_id: TenantDep, services: ServicesDep) -> Response:
    """Forget an experience (its past contributions stay in the decisions that used them). 409
    ``quarantined`` for one in quarantine: release it (logged) or retire it first, so that adding it again
    under its external id cannot take it out of quarantine without an entry in the log."""
    experiences.change(services, tenant_id, agent_id, experience_id, delete=True)
    return Response(status_code=204)


@router.post("/search")
def search_experiences(agent_id: str, body: SearchRequest, tenant_id: TenantDep, services: ServicesDep) -> SearchResult:
    return experiences.search(services, tenant_id, agent_id, body.query, body.k)


@router.post("/rank")
def rank_experiences(agent_id: str, body: RankRequest, tenant_id: TenantDep, services: ServicesDep) -> RankResult:
    """Rank candidates from your own store: the k to use, best first, by the agent's ``retrieval`` (by
    similarity, or ``value_aware``: similarity and learned value, weighed by the trust evidence), each with
    why it was picked and its value now. Quarantined candidates are never picked; nothing is written."""
    return curation.rank(services, tenant_id, agent_id, body)


@router.post("/{experience_id}/release")
def release_experience(
    agent_id: str,
    experience_id: str,
    body: ReleaseRequest,
    tenant_id: TenantDep,
    services: ServicesDep,
    request: Request,
    key: IdempotencyKey = None,
) -> ExperiencePublic:
    """Release a quarantined experience by hand: it is retrieved again and its test starts afresh. A
    ``release`` entry of the agent's log records the evidence at this moment and the reason; 409
    ``not_quarantined`` for an experience that is not quarantined. With an ``Idempotency-Key``, a retry
    whose first answer was lost gets that answer (the release is logged once), not a 409."""
    guard = Idempotency(key, tenant_id, request, body)
    return curation.release(services, tenant_id, agent_id, experience_id, body.reason, guard)
