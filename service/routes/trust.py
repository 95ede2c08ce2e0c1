"""Trust and values: gate state, recent scores, the raw log a page at a time, chain verification
(:mod:`service.usecases.trust`, :mod:`service.usecases.values`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from service.deps import ServicesDep, TenantDep
from service.pagination import CursorQuery
from service.requests import StrictJSONRoute
from service.schemas import LogPage, TrustPublic, ValuesPublic, VerifyPublic
from service.usecases import trust, values

router = APIRouter(prefix="/v1/agents/{agent_id}", tags=["trust"], route_class=StrictJSONRoute)

MAX_LOG_PAGE = 1000


@router.get("/trust")
def get_trust(
    agent_id: str,
    tenant_id: TenantDep,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LOG_PAGE, description="how many of the most recent scores")] = 200,
) -> TrustPublic:
    return trust.state(services, tenant_id, agent_id, limit)


@router.get("/trust/log")
def get_log(
    agent_id: str,
    tenant_id: TenantDep,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LOG_PAGE, description=f"entries per page (1..{MAX_LOG_PAGE})")] = 200,
    cursor: CursorQuery = None,
) -> LogPage:
    """The raw hash-chained log, a page at a time, for verification outside the service."""
    return trust.log_page(services, tenant_id, agent_id, limit, cursor)


@router.get("/trust/verify")
def verify_trust(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> VerifyPublic:
    """Recompute the whole chain from the stored rows (read page by page) and check it ends at the engine's head."""
    return trust.verify(services, tenant_id, agent_id)


@router.get("/values")
def get_values(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> ValuesPublic:
    """Every valued experience, best first: text, external id, mean, sd, 90% interval and P(v > 0)."""
    return values.read(services, tenant_id, agent_id)
