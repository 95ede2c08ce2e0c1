"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from service.deps import ServicesDep
from service.errors import ApiError

router = APIRouter(tags=["operations"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
def readyz(services: ServicesDep) -> dict[str, str]:
    try:
        with services.sessions() as session:
            session.execute(text("SELECT 1"))
    except Exception as error:
        raise ApiError(503, "database_unavailable", f"the database does not answer: {type(error).__name__}", None) from None
    return {"status": "ready"}


@router.get("/metrics", response_class=PlainTextResponse, responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
def metrics() -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
