"""The LLM providers and models this server's operator allows for server drafting."""

from __future__ import annotations

from fastapi import APIRouter

from service.api_types import ProviderPublic, ProvidersPublic
from service.deps import ServicesDep, TenantDep
from service.requests import StrictJSONRoute

router = APIRouter(prefix="/v1/llm", tags=["llm"], route_class=StrictJSONRoute)


@router.get("/providers")
def list_providers(tenant_id: TenantDep, services: ServicesDep) -> ProvidersPublic:
    return ProvidersPublic(providers=[ProviderPublic(**p.public()) for p in services.providers.by_name.values()])
