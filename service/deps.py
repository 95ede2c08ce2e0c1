"""Request dependencies: the process's services and the caller's tenant."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.db import transaction
from service.embeddings import Embedder
from service.errors import ApiError
from service.models import ApiKey
from service.retrieval import IndexCache
from service.security import hash_key
from service.settings import Settings
from service.store import EngineCache

__all__ = ["RateLimiter", "Services", "ServicesDep", "TenantDep"]


class RateLimiter:
    """Sliding one-minute window per API key hash (per worker process)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        if self.per_minute <= 0:
            return True
        now = time.monotonic()
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            while hits and now - hits[0] > 60.0:
                hits.popleft()
            if len(hits) >= self.per_minute:
                return False
            hits.append(now)
            return True


@dataclass
class Services:
    settings: Settings
    sessions: sessionmaker[Session]
    embedder: Embedder
    engines: EngineCache = field(default_factory=EngineCache)
    indexes: IndexCache = field(default_factory=IndexCache)
    limiter: RateLimiter = field(default_factory=lambda: RateLimiter(0))


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


def get_tenant(request: Request, services: ServicesDep) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(401, "unauthorized", "missing API key: send 'Authorization: Bearer <key>'", "authorization")
    digest = hash_key(key.strip())
    with transaction(services.sessions) as session:
        tenant_id = session.scalars(select(ApiKey.tenant_id).where(ApiKey.key_hash == digest, ApiKey.revoked.is_(False))).first()
    if tenant_id is None:
        raise ApiError(401, "unauthorized", "unknown or revoked API key", "authorization")
    if not services.limiter.allow(digest):
        raise ApiError(429, "rate_limited", f"more than {services.limiter.per_minute} requests a minute for this key", "authorization")
    return tenant_id


TenantDep = Annotated[str, Depends(get_tenant)]
