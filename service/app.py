"""The FastAPI application factory."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from prometheus_client import Counter, Histogram

from service.db import make_engine, make_session_factory
from service.deps import RateLimiter, Services
from service.embeddings import get_embedder
from service.errors import install_handlers
from service.limits import BodyLimitMiddleware
from service.logs import configure_logging
from service.routes import agents, decisions, experiences, health, refit, trust
from service.schemas import ERROR_RESPONSES
from service.settings import Settings

__all__ = ["create_app", "create_app_from_env"]

logger = logging.getLogger("memtrial.service")
REQUESTS = Counter("memtrial_requests_total", "HTTP requests", ["method", "route", "status"])
LATENCY = Histogram("memtrial_request_seconds", "HTTP request latency", ["method", "route"])


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    engine = make_engine(settings.database_url)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if settings.preload_model:  # ready only once the embedding model answers
            await run_in_threadpool(get_embedder().encode, ["warm-up"])
        yield
        engine.dispose()

    app = FastAPI(
        title="memtrial",
        version="0.1.0",
        description="Memory credit assignment with trust gating for LLM decision agents.",
        lifespan=lifespan,
    )
    app.state.services = Services(
        settings=settings,
        sessions=make_session_factory(engine),
        embedder=get_embedder(),
        limiter=RateLimiter(settings.rate_limit_per_minute),
    )
    install_handlers(app)
    app.include_router(health.router, responses={413: ERROR_RESPONSES[413], 503: ERROR_RESPONSES[503]})
    for module in (agents, experiences, decisions, trust, refit):
        app.include_router(module.router, responses=ERROR_RESPONSES)

    @app.middleware("http")
    async def _observe(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        start = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        LATENCY.labels(request.method, path).observe(time.perf_counter() - start)
        REQUESTS.labels(request.method, path, str(response.status_code)).inc()
        elapsed = round(1000 * (time.perf_counter() - start), 2)
        logger.info("request", extra={"method": request.method, "path": path, "status": response.status_code, "ms": elapsed})
        return response

    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)
    return app


def create_app_from_env() -> FastAPI:
    """Factory for uvicorn workers (settings from MEMTRIAL_* variables, JSON logs on stderr)."""
    configure_logging(os.environ.get("MEMTRIAL_LOG_LEVEL", "INFO"))
    return create_app(Settings.from_env())
