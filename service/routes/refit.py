"""Full-Bayes refits: ``POST .../refit`` queues a background job; ``GET .../refit/{job}`` reports it
(:mod:`service.usecases.refit`)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from service.api_types import RefitPublic
from service.deps import ServicesDep, TenantDep
from service.idempotency import Idempotency, IdempotencyKey
from service.requests import StrictJSONRoute
from service.usecases import refit
from service.usecases.refit import RefitCreate

router = APIRouter(prefix="/v1/agents/{agent_id}/refit", tags=["refit"], route_class=StrictJSONRoute)


@router.post("", status_code=202)
def start_refit(
    agent_id: str,
    tenant_id: TenantDep,
    services: ServicesDep,
    request: Request,
    body: RefitCreate | None = None,
    key: IdempotencyKey = None,
) -> RefitPublic:
    """Queue a full-Bayes refit (NUTS by default, or SVI) of the agent's values; poll it with GET .../refit/{job}.
    429 ``queue_full`` when this server holds its most refits; 503 ``refit_unavailable`` when the Dask
    scheduler refits run on cannot be reached (nothing is queued)."""
    chosen = body or RefitCreate()
    return refit.start(services, tenant_id, agent_id, chosen.method, Idempotency(key, tenant_id, request, chosen))


@router.get("/{job_id}")
def get_refit(agent_id: str, job_id: str, tenant_id: TenantDep, services: ServicesDep) -> RefitPublic:
    return refit.job(services, tenant_id, agent_id, job_id)
