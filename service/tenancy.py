"""Tenants and their API keys."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.models import ApiKey, Tenant
from service.security import hash_key, new_key

__all__ = ["TenantExistsError", "create_tenant_with_key"]


class TenantExistsError(Exception):
    pass


def create_tenant_with_key(session: Session, name: str) -> tuple[str, str]:
    """Create a tenant and one API key; returns (tenant id, the key in clear, shown once)."""
    if not name.strip():
        raise TenantExistsError("tenant name must not be empty")
    if session.scalars(select(Tenant).where(Tenant.name == name)).first() is not None:
        raise TenantExistsError(f"tenant {name!r} already exists")
    tenant = Tenant(name=name)
    session.add(tenant)
    session.flush()
    key = new_key()
    session.add(ApiKey(tenant_id=tenant.id, key_hash=hash_key(key), prefix=key[:8]))
    return tenant.id, key
