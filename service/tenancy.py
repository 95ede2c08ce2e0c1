"""Tenants and their API keys: create, list, revoke, rotate."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from service.models import Agent, ApiKey, Tenant
from service.security import hash_key, new_key

__all__ = [
    "TenantError",
    "TenantExistsError",
    "TenantSummary",
    "create_tenant_with_key",
    "list_tenants",
    "revoke_keys",
    "rotate_key",
]


class TenantError(Exception):
    """A tenant operation that cannot be done (the message says why)."""


class TenantExistsError(TenantError):
    pass


@dataclass(frozen=True, slots=True)
class TenantSummary:
    id: str
    name: str
    created_at: dt.datetime
    active_keys: tuple[str, ...]  # key prefixes
    revoked_keys: int
    agents: int


def _tenant(session: Session, name: str) -> Tenant:
    tenant = session.scalars(select(Tenant).where(Tenant.name == name)).first()
    if tenant is None:
        raise TenantError(f"no tenant is named {name!r}")
    return tenant


def create_tenant_with_key(session: Session, name: str) -> tuple[str, str]:
    """Create a tenant and one API key; returns (tenant id, the key in clear, shown once)."""
    if not name.strip():
        raise TenantExistsError("tenant name must not be empty")
    if len(name) > 200 or not name.isprintable():  # a tab or a newline would break `tenants list`'s columns
        raise TenantExistsError(f"tenant name must be at most 200 printable characters, got {name!r}")
    if session.scalars(select(Tenant).where(Tenant.name == name)).first() is not None:
        raise TenantExistsError(f"tenant {name!r} already exists")
    tenant = Tenant(name=name)
    session.add(tenant)
    session.flush()
    return tenant.id, _add_key(session, tenant.id)


def _add_key(session: Session, tenant_id: str) -> str:
    key = new_key()
    session.add(ApiKey(tenant_id=tenant_id, key_hash=hash_key(key), prefix=key[:8]))
    return key


def list_tenants(session: Session) -> list[TenantSummary]:
    """Every tenant with its active key prefixes, revoked key count and number of agents, by name."""
    agents = dict(session.execute(select(Agent.tenant_id, func.count()).group_by(Agent.tenant_id)).all())
    keys: dict[str, list[ApiKey]] = {}
    for key in session.scalars(select(ApiKey).order_by(ApiKey.created_at)):
        keys.setdefault(key.tenant_id, []).append(key)
    return [
        TenantSummary(
            id=tenant.id,
            name=tenant.name,
            created_at=tenant.created_at,
            active_keys=tuple(k.prefix for k in keys.get(tenant.id, []) if not k.revoked),
            revoked_keys=sum(1 for k in keys.get(tenant.id, []) if k.revoked),
            agents=int(agents.get(tenant.id, 0)),
        )
        for tenant in session.scalars(select(Tenant).order_by(Tenant.name))
    ]


def revoke_keys(session: Session, name: str, prefix: str | None = None) -> int:
    """Revoke the tenant's active keys (only the one starting with ``prefix`` when given); returns how many."""
    tenant = _tenant(session, name)
    condition = [ApiKey.tenant_id == tenant.id, ApiKey.revoked.is_(False)]
    if prefix is not None and not prefix.strip():  # every key starts with it: it would choose any one
        raise TenantError(f"--key must give the start of a key (as `tenants list` shows it), got {prefix!r}")
    if prefix is not None:
        matching = session.scalars(select(ApiKey).where(*condition)).all()
        chosen = [k for k in matching if k.prefix.startswith(prefix) or prefix.startswith(k.prefix)]
        if len(chosen) != 1:
            raise TenantError(
                f"prefix {prefix!r} matches {len(chosen)} active keys of {name!r}; give a prefix that matches exactly one"
            )
        condition.append(ApiKey.id == chosen[0].id)
    result = session.execute(update(ApiKey).where(*condition).values(revoked=True))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def rotate_key(session: Session, name: str) -> tuple[str, int]:
    """Issue a new key and revoke every other active key of the tenant; returns (the new key, keys revoked)."""
    tenant = _tenant(session, name)
    revoked = revoke_keys(session, name)
    return _add_key(session, tenant.id), revoked
