"""Liveness, readiness and Prometheus metrics.

``/healthz`` runs on the event loop and touches nothing: it answers while the
database hangs and every worker thread is busy. ``/readyz`` answers 503 until
the embedding model has loaded and while the database does not answer a
``SELECT 1`` within two seconds (checked on a thread of its own).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, Gauge, generate_latest
from sqlalchemy import Engine, text

from service.db import pool_figures
from service.deps import ServicesDep
from service.errors import ApiError
from service.requests import StrictJSONRoute

router = APIRouter(tags=["operations"], route_class=StrictJSONRoute)
READY_TIMEOUT = 2.0
_PROBES = ThreadPoolExecutor(max_workers=2, thread_name_prefix="readiness")
POOL_SIZE = Gauge("memtrial_db_pool_size", "Connections the database pool keeps (SQLAlchemy's pool_size)")
POOL_CONNECTIONS = Gauge(
    "memtrial_db_pool_connections", "Open database connections of this worker's pool, by state", ["state"]
)
POOL_OVERFLOW = Gauge("memtrial_db_pool_overflow", "Connections open beyond the pool's size (its overflow)")


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(services: ServicesDep) -> dict[str, str]:
    if services.embedder.load_error is not None:
        raise ApiError(503, "not_ready", f"the embedding model failed to load: {services.embedder.load_error}", None)
    if services.settings.preload_model and not services.embedder.loaded:
        raise ApiError(503, "not_ready", "the embedding model is still loading", None, retry_after=2)

    def probe() -> None:
        with services.sessions() as session:
            session.execute(text("SELECT 1"))

    try:
        await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(_PROBES, probe), READY_TIMEOUT)
    except TimeoutError:
        raise ApiError(
            503, "database_unavailable", f"the database did not answer within {READY_TIMEOUT:g} s", None, retry_after=5
        ) from None
    except Exception as error:
        raise ApiError(
            503, "database_unavailable", f"the database does not answer: {type(error).__name__}", None, retry_after=5
        ) from None
    return {"status": "ready"}


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def metrics(services: ServicesDep) -> Response:
    bind = services.sessions.kw.get("bind")
    if isinstance(bind, Engine):  # read at each scrape: the pool as it is now
        figures = pool_figures(bind)
        POOL_SIZE.set(figures["size"])
        POOL_CONNECTIONS.labels(state="in_use").set(figures["in_use"])
        POOL_CONNECTIONS.labels(state="idle").set(figures["idle"])
        POOL_OVERFLOW.set(figures["overflow"])
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
