"""Liveness, readiness and Prometheus metrics.

``/healthz`` runs on the event loop and touches nothing: it answers while the
database hangs and every worker thread is busy. ``/readyz`` answers 503 until
the embedding model has loaded, while the database does not answer a
``SELECT 1`` within two seconds (checked on a thread of its own), while its
schema is missing or older than this release needs (``--no-migrate`` on a
database nobody migrated: every request would fail), and while it refuses
every write (a read-only database: an agent's every plan and settlement would fail).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import text

from service.db import observe_pool, write_refusal
from service.deps import ServicesDep
from service.errors import ApiError
from service.metrics import scrape
from service.migrations import schema_problem
from service.requests import StrictJSONRoute

router = APIRouter(tags=["operations"], route_class=StrictJSONRoute)
READY_TIMEOUT = 2.0
_PROBES = ThreadPoolExecutor(max_workers=2, thread_name_prefix="readiness")


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(services: ServicesDep) -> dict[str, str]:
    if services.embedder.load_error is not None:
        # anyone who reaches the port reads this: the error's type only (its message may name the server's
        # files); the log has the whole error, written when the load failed
        kind = services.embedder.load_error.split(":", 1)[0]
        message = f"the embedding model failed to load ({kind}; the server's log has its message)"
        raise ApiError(503, "not_ready", message, None)
    if services.settings.preload_model and not services.embedder.loaded:
        raise ApiError(503, "not_ready", "the embedding model is still loading", None, retry_after=2)

    def probe() -> str | None:
        with services.sessions() as session:
            session.execute(text("SELECT 1"))
            return schema_problem(session) or write_refusal(session)

    try:
        problem = await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(_PROBES, probe), READY_TIMEOUT)
    except TimeoutError:
        raise ApiError(
            503, "database_unavailable", f"the database did not answer within {READY_TIMEOUT:g} s", None, retry_after=5
        ) from None
    except Exception as error:
        raise ApiError(
            503, "database_unavailable", f"the database does not answer: {type(error).__name__}", None, retry_after=5
        ) from None
    if problem is not None:
        raise ApiError(503, "not_ready", problem, None, retry_after=5)
    return {"status": "ready"}


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def metrics(services: ServicesDep) -> Response:
    observe_pool(services.sessions)
    return Response(scrape(), media_type=CONTENT_TYPE_LATEST)
