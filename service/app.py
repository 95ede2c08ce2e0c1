"""The FastAPI application factory."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from prometheus_client import Counter, Histogram

from service import tracing
from service.cache import ByteBudget
from service.db import make_engine, make_session_factory
from service.deps import KeyCache, Services, client_address
from service.embeddings import Embedder, OnnxEmbedder, get_embedder
from service.handlers import install_handlers
from service.head import HeadMiddleware, asked_method
from service.jobs import RefitRunner
from service.leases import finish_abandons, stopping_bound, withdraw_expired
from service.limits import BodyLimitMiddleware
from service.logs import REQUEST_ID, configure_logging
from service.metrics import forget_worker
from service.providers import load_providers
from service.ratelimit import RateLimiter, SharedRateLimiter, TrustedProxies
from service.retrieval import IndexCache
from service.routes import agents, decisions, experiences, health, llm, refit, trust
from service.schemas import ERROR_RESPONSES
from service.settings import Settings
from service.stopping import StoppingMiddleware
from service.store import EngineCache
from service.supervision import watch_supervisor

__all__ = ["create_app", "create_app_from_env"]

logger = logging.getLogger("memtrial.service")
REQUESTS = Counter("memtrial_requests_total", "HTTP requests", ["method", "route", "status"])
LATENCY = Histogram("memtrial_request_seconds", "HTTP request latency", ["method", "route"])
ERRORS = Counter("memtrial_unhandled_errors_total", "Requests that ended in an unhandled error (500)", ["route"])
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def _preload(embedder: Embedder) -> None:
    embedder.preload()
    if embedder.load_error is not None:
        logger.error("the embedding model failed to load", extra={"error": embedder.load_error})
    elif isinstance(embedder, OnnxEmbedder) and embedder.fell_back is not None:
        # ready all the same, on torch (slower for one query): said once, so an operator knows why
        logger.warning(
            "the ONNX Runtime path could not load; embedding with torch instead (MEMTRIAL_EMBEDDER, MEMTRIAL_ONNX_CACHE)",
            extra={"error": embedder.fell_back},
        )


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    engine = make_engine(settings.database_url, settings.database_timeouts)
    sessions = make_session_factory(engine)
    runner = RefitRunner(
        sessions,
        settings.refit_queue_size,
        settings.idempotency_hours,
        database_url=settings.database_url,
        engine=settings.refit_engine,
        scheduler=settings.dask_scheduler,
        stale=settings.refit_stale_seconds,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if settings.preload_model:  # the port is open at once; /readyz says ready when the model answers
            threading.Thread(target=_preload, args=(services.embedder,), name="embedder-load", daemon=True).start()
        runner.start()
        tracing.setup_tracing()  # on when an OTEL_EXPORTER_OTLP_*ENDPOINT names a collector
        yield
        # the requests the server stopped in the middle of release their keys and withdraw their plans first
        await asyncio.to_thread(finish_abandons, stopping_bound(services))
        runner.stop()
        engine.dispose()
        tracing.shutdown()  # the spans still queued go out
        forget_worker(os.getpid())  # its gauges leave the other workers' sums

    app = FastAPI(
        title="memtrial",
        version="0.1.0",
        description="Memory credit assignment with trust gating for LLM decision agents.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    budget = ByteBudget(int(settings.cache_mb * 2**20))  # engines and indexes together
    services = Services(
        settings=settings,
        sessions=sessions,
        engines=EngineCache(budget),
        indexes=IndexCache(budget=budget),
        embedder=get_embedder(settings.embedder),
        providers=load_providers(settings.llm_config),
        limiter=_limiter(settings),
        keys=KeyCache(settings.auth_cache_seconds),
        jobs=runner,
        trusted_proxies=TrustedProxies(settings.trusted_proxies),
    )
    app.state.services = services
    runner.chores.append(lambda: withdraw_expired(services))
    install_handlers(app)
    app.include_router(health.router, responses={status: ERROR_RESPONSES[status] for status in (413, 422, 503)})
    for module in (agents, experiences, decisions, trust, refit, llm):
        app.include_router(module.router, responses=ERROR_RESPONSES)
    _mount_docs(app)
    _mount_dashboard(app)
    app.add_middleware(HeadMiddleware)  # innermost: a HEAD runs as its GET, its answer without the body
    # the body's limits inside the observer (the middleware added last is the outermost): a 413 or 408 they answer
    # is logged, counted in /metrics, traced and given its X-Request-ID like any other answer
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes, body_timeout=settings.body_timeout_seconds)
    app.middleware("http")(_observe)
    # outermost: a request the server stops in the middle of is answered in JSON (503 server_stopping)
    app.add_middleware(StoppingMiddleware)
    return app


async def _observe(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Every answer logged, counted in /metrics, traced and given its ``X-Request-ID``."""
    given = request.headers.get("x-request-id", "")
    request.state.request_id = given if _REQUEST_ID.match(given) else uuid.uuid4().hex
    REQUEST_ID.set(request.state.request_id)  # this request's context (and its threads'): its records name it
    start = time.perf_counter()
    with tracing.request_span(_method_of(request), request.headers) as current:
        try:
            response = await call_next(request)
        except asyncio.CancelledError:  # the server stopping: StoppingMiddleware answers 503
            _record(request, 503, start)
            _describe(current, request, 503)
            raise
        except Exception:
            _record(request, 500, start)
            ERRORS.labels(_route_of(request)).inc()
            _describe(current, request, 500)
            raise
        _record(request, response.status_code, start)
        _describe(current, request, response.status_code)
    response.headers["X-Request-ID"] = request.state.request_id
    return response


def _limiter(settings: Settings) -> RateLimiter:
    """Rate limits in Redis when ``MEMTRIAL_REDIS_URL`` names one (this machine's table while it does not
    answer), else in this machine's table."""
    local = SharedRateLimiter(settings.rate_limit_file)
    if settings.redis_url is None:
        return local
    from service.ratelimit_redis import RedisRateLimiter

    return RedisRateLimiter(settings.redis_url, settings.redis_prefix, local)


#: label values come from fixed sets, so no request can add series to /metrics: methods outside these
#: read "other", paths no route matched read "unmatched", statuses are HTTP's own three digits
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _route_of(request: Request) -> str:
    return str(getattr(request.scope.get("route"), "path", "unmatched"))


def _method_of(request: Request) -> str:
    method = asked_method(request.scope)
    return method if method in METHODS else "other"


def _describe(current: Any, request: Request, status: int) -> None:
    """Name a request's span by its route and give it the request's method, route and status."""
    if current is None:
        return
    route = _route_of(request)
    current.update_name(f"{_method_of(request)} {route}")
    current.set_attribute("http.request.method", _method_of(request))
    current.set_attribute("http.route", route)
    current.set_attribute("http.response.status_code", status)
    current.set_attribute("memtrial.request_id", request.state.request_id)


def _record(request: Request, status: int, start: float) -> None:
    path = _route_of(request)
    method = _method_of(request)
    LATENCY.labels(method, path).observe(time.perf_counter() - start)
    REQUESTS.labels(method, path, str(status) if 100 <= status <= 599 else "other").inc()
    elapsed = round(1000 * (time.perf_counter() - start), 2)
    # the client as rate limits see it: the peer, or the address a trusted proxy names (MEMTRIAL_TRUSTED_PROXIES)
    client = client_address(request, request.app.state.services.trusted_proxies)
    logger.info(
        "request",
        extra={
            "request_id": request.state.request_id,
            "method": method,
            "path": path,
            "status": status,
            "ms": elapsed,
            "client": client,
        },
    )


def _mount_docs(app: FastAPI) -> None:
    """The interactive API reference, with Swagger UI's assets served from the installed package (no CDN), under
    a Content-Security-Policy: the page runs only this service's scripts and talks only to this service (its
    start script is a file of its own, ``static/api-docs.js``, so no inline script need be allowed), and no other
    site may frame it (a key typed into its Authorize box stays on this page)."""
    from importlib.resources import files

    # Swagger UI 5 (the first to read OpenAPI 3.1, which this API's document is), as fastapi-offline ships it
    assets = Path(str(files("fastapi_offline") / "static"))
    app.mount("/docs/assets", StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def _docs() -> HTMLResponse:
        page = HTMLResponse((STATIC / "api-docs.html").read_text(encoding="utf-8"))
        page.headers["Content-Security-Policy"] = DOCS_POLICY
        return page


STATIC = Path(__file__).resolve().parent / "static"
#: the dashboard loads only its own script and style and talks only to this service
#: the API reference likewise (Swagger UI draws its icons from data: addresses)
DOCS_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
DASHBOARD_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'none'; frame-ancestors 'none'"


def _mount_dashboard(app: FastAPI) -> None:
    """A read-only page per agent (``/dashboard/{agent_id}``), its assets served from the package.

    The page itself holds no data: its script reads everything from the API
    with the tenant's key (given as ``#key=...`` in the address, or typed in),
    so the page shows only what that key may read.
    """
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/favicon.ico", include_in_schema=False)
    async def _favicon() -> FileResponse:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    @app.get("/dashboard/{agent_id}", include_in_schema=False)
    async def _dashboard(agent_id: str) -> HTMLResponse:
        page = HTMLResponse((STATIC / "dashboard.html").read_text(encoding="utf-8"))
        page.headers["Content-Security-Policy"] = DASHBOARD_POLICY
        page.headers["Cache-Control"] = "no-store"
        return page


def create_app_from_env() -> FastAPI:
    """Factory for uvicorn workers (settings from MEMTRIAL_* variables, JSON logs on stderr)."""
    settings = Settings.from_env()
    configure_logging(settings.log_level)
    supervisor = os.environ.get("MEMTRIAL_SUPERVISOR_PID")
    if supervisor:
        watch_supervisor(int(supervisor))
    return create_app(settings)
