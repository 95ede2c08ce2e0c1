"""Request dependencies: the process's services and the caller's tenant."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.db import transaction
from service.embeddings import Embedder
from service.errors import ApiError
from service.jobs import RefitRunner
from service.models import ApiKey
from service.providers import Providers
from service.ratelimit import Decision, RateLimiter, SharedRateLimiter, TrustedProxies
from service.retrieval import IndexCache
from service.security import hash_key
from service.settings import Settings
from service.store import EngineCache

__all__ = ["KeyCache", "Services", "ServicesDep", "TenantDep"]


class KeyCache:
    """API key hash -> tenant id, per process, for at most ``ttl`` seconds (unknown keys for at most 1 s).

    Authentication then costs no database round trip on most requests, and a
    key revoked in the database is refused everywhere within ``ttl``.
    """

    NEGATIVE_TTL = 1.0

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._entries: dict[str, tuple[float, str | None]] = {}
        self._lock = threading.Lock()

    def get(self, digest: str, fetch: Callable[[], str | None]) -> str | None:
        now = time.monotonic()
        with self._lock:
            cached = self._entries.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        tenant_id = fetch()
        if self.ttl > 0:
            lifetime = self.ttl if tenant_id is not None else min(self.ttl, self.NEGATIVE_TTL)
            with self._lock:
                if len(self._entries) > 100_000:  # a flood of distinct keys: start again rather than grow
                    self._entries.clear()
                self._entries[digest] = (now + lifetime, tenant_id)
        return tenant_id


@dataclass
class Services:
    settings: Settings
    sessions: sessionmaker[Session]
    embedder: Embedder
    providers: Providers = field(default_factory=lambda: Providers({}))
    engines: EngineCache = field(default_factory=EngineCache)
    indexes: IndexCache = field(default_factory=IndexCache)
    limiter: RateLimiter = field(default_factory=SharedRateLimiter)
    keys: KeyCache = field(default_factory=lambda: KeyCache(5.0))
    jobs: RefitRunner | None = None
    trusted_proxies: TrustedProxies = field(default_factory=lambda: TrustedProxies(""))


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
_bearer = HTTPBearer(
    auto_error=False, description="An API key of your tenant (`memtrial tenants create NAME` prints one)."
)


def client_address(request: Request, trusted: TrustedProxies) -> str:
    """The real source of a request: its peer, or, when the peer is a trusted proxy, the last address
    of ``X-Forwarded-For`` that is not itself a trusted proxy (what any other peer sends there is ignored)."""
    peer = request.client.host if request.client else "unknown"
    if not trusted.trusts(peer):
        return peer
    hops = [
        hop.strip() for header in request.headers.getlist("x-forwarded-for") for hop in header.split(",") if hop.strip()
    ]
    for hop in reversed(hops):
        if not trusted.trusts(hop):
            return hop
    return peer


def _too_many_failures(verdict: Decision) -> ApiError:
    return ApiError(
        429,
        "rate_limited",
        "too many requests with a missing or invalid API key from this address",
        "authorization",
        retry_after=verdict.retry_after,
    )


def _refuse(services: Services, source: str, message: str) -> ApiError:
    """401, or 429 once a client address has failed too often (failed attempts are limited too)."""
    verdict = services.limiter.hit(f"auth-failure:{source}", services.settings.auth_failures_per_minute)
    if not verdict.allowed:
        return _too_many_failures(verdict)
    return ApiError(401, "unauthorized", message, "authorization")


def authenticate(request: Request, services: Services) -> tuple[str, str]:
    """The tenant of the request's API key, and the key's digest; 401 (429 once its address has failed too
    often) otherwise. Counts nothing for a good key: :func:`get_tenant` does, once per request."""
    source = client_address(request, services.trusted_proxies)
    # a source over its failure limit is refused before its key is looked up, so a right guess looks like a wrong one
    blocked = services.limiter.check(f"auth-failure:{source}", services.settings.auth_failures_per_minute)
    if not blocked.allowed:
        raise _too_many_failures(blocked)
    headers = request.headers.getlist("authorization")
    if len(headers) > 1:  # which one counts would be the proxy's guess or the server's: neither is taken
        raise _refuse(services, source, "send one Authorization header, not several")
    header = headers[0] if headers else ""
    scheme, _space, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise _refuse(services, source, "missing API key: send 'Authorization: Bearer <key>'")
    digest = hash_key(key.strip())

    def fetch() -> str | None:
        with transaction(services.sessions) as session:
            found: str | None = session.scalars(
                select(ApiKey.tenant_id).where(ApiKey.key_hash == digest, ApiKey.revoked.is_(False))
            ).first()
            return found

    tenant_id = services.keys.get(digest, fetch)
    if tenant_id is None:
        raise _refuse(services, source, "unknown or revoked API key")
    return tenant_id, digest


def authenticate_before_the_body(request: Request) -> None:
    """:func:`authenticate`, run before a request's body is read: a body is parsed only for a known key, so a
    client without one, or over its failure limit, costs no parsing (a 2 MB body took 100 ms of the loop). The
    answer is kept for :func:`get_tenant`, which then does not look the key up again."""
    request.state.authenticated = authenticate(request, get_services(request))


def get_tenant(
    request: Request, services: ServicesDep, _: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)]
) -> str:
    early: tuple[str, str] | None = getattr(request.state, "authenticated", None)
    tenant_id, digest = early if early is not None else authenticate(request, services)
    verdict = services.limiter.hit(f"key:{digest}", services.settings.rate_limit_per_minute)
    if not verdict.allowed:
        raise ApiError(
            429,
            "rate_limited",
            f"more than {services.settings.rate_limit_per_minute} requests a minute for this key",
            "authorization",
            retry_after=verdict.retry_after,
        )
    request.state.tenant_id = tenant_id
    return tenant_id


TenantDep = Annotated[str, Depends(get_tenant)]
