"""One mapping from errors to HTTP: ``{"error": {"code", "message", "field"}}``.

Core errors (``MemtrialError``) map by class; request validation gives 422
with the failing field's path (malformed JSON: ``invalid_json``); a database
that is down or too slow gives 503 ``database_unavailable`` with
``Retry-After``; a lock wait that timed out (another request holds the agent:
PostgreSQL's lock timeout, SQLite's busy timeout) gives 503 ``agent_busy``
with ``Retry-After``; a write that lost a race gives 409; anything unexpected gives 500, logged once with the request
id and the route and no request content.
"""

from __future__ import annotations

import logging
import sqlite3

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException

from memtrial.errors import (
    DuplicateError,
    LifecycleError,
    MemtrialError,
    PrematureSettlementError,
    SettlementConflictError,
    StateError,
    TimeOrderError,
    UnknownDecisionError,
)

__all__ = ["ApiError", "error_body", "install_handlers", "is_lock_wait"]

logger = logging.getLogger("memtrial.service")
DATABASE_RETRY_SECONDS = 5
AGENT_BUSY_RETRY_SECONDS = 1
LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE for a lock wait ended by lock_timeout


class ApiError(Exception):
    """An error the service raises itself, with its HTTP status (and ``Retry-After`` seconds for 429/503)."""

    def __init__(
        self, status: int, code: str, message: str, field: str | None = None, *, retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field
        self.retry_after = retry_after


def error_body(code: str, message: str, field: str | None) -> dict[str, dict[str, str | None]]:
    return {"error": {"code": code, "message": message, "field": field}}


_CORE_STATUS: list[tuple[type[MemtrialError], int, str]] = [
    (UnknownDecisionError, 404, "not_found"),
    (PrematureSettlementError, 409, "premature_settlement"),
    (SettlementConflictError, 409, "settlement_conflict"),
    (TimeOrderError, 409, "time_order"),
    (DuplicateError, 409, "conflict"),
    (LifecycleError, 409, "conflict"),
    (StateError, 500, "corrupt_state"),
    (MemtrialError, 422, "invalid"),
]


#: Names of union members that pydantic puts into error locations; they are not fields.
_UNION_MEMBERS = frozenset({"ExperienceCreate", "ExperienceBatch", "single", "batch"})


def is_lock_wait(error: BaseException) -> bool:
    """Whether a database error is a lock wait that timed out (PostgreSQL lock_timeout, SQLite busy)."""
    if getattr(error, "sqlstate", None) == LOCK_NOT_AVAILABLE:
        return True
    return isinstance(error, sqlite3.OperationalError) and "locked" in str(error)


def _field_of(location: tuple[int | str, ...]) -> str:
    parts = [str(p) for p in location if p not in ("body", "query", "path", "header") and p not in _UNION_MEMBERS]
    return ".".join(parts) or "body"


def _request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", "-"))


def _route(request: Request) -> str:
    return str(getattr(request.scope.get("route"), "path", "unmatched"))


def install_handlers(app: FastAPI) -> None:

    from service.usecases.unit import Replayed

    @app.exception_handler(Replayed)
    async def _replayed(_: Request, replayed: Replayed) -> JSONResponse:
        return replayed.response

    @app.exception_handler(ApiError)
    async def _api(_: Request, error: ApiError) -> JSONResponse:
        headers = {} if error.retry_after is None else {"Retry-After": str(error.retry_after)}
        if error.status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="memtrial"'
        return JSONResponse(
            error_body(error.code, error.message, error.field), status_code=error.status, headers=headers or None
        )

    @app.exception_handler(MemtrialError)
    async def _core(request: Request, error: MemtrialError) -> JSONResponse:
        for kind, status, code in _CORE_STATUS:
            if isinstance(error, kind):
                if status >= 500:
                    logger.error(
                        "core state error",
                        extra={
                            "request_id": _request_id(request),
                            "route": _route(request),
                            "error_type": type(error).__name__,
                        },
                    )
                return JSONResponse(error_body(code, error.message, error.field), status_code=status)
        raise AssertionError("unreachable")  # pragma: no cover

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0]
        if first.get("type") == "json_invalid":
            detail = first.get("ctx", {}).get("error", "malformed")
            return JSONResponse(error_body("invalid_json", f"body: not valid JSON ({detail})", "body"), status_code=422)
        location = tuple(first.get("loc", ()))
        field = _field_of(location)
        if location and location[0] == "header":
            field = str(location[-1]).replace("_", "-").title() if isinstance(location[-1], str) else field
        message = f"{field}: {first.get('msg', 'invalid value')}"
        return JSONResponse(error_body("invalid", message, field), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, error: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized"}.get(error.status_code, "http_error")
        return JSONResponse(
            error_body(code, str(error.detail), None),
            status_code=error.status_code,
            headers=getattr(error, "headers", None),
        )

    @app.exception_handler(OperationalError)
    @app.exception_handler(PoolTimeoutError)
    async def _database_down(request: Request, error: Exception) -> JSONResponse:
        cause = getattr(error, "orig", None) or error
        if is_lock_wait(cause):
            logger.warning(
                "agent busy",
                extra={
                    "request_id": _request_id(request),
                    "route": _route(request),
                    "error_type": type(cause).__name__,
                },
            )
            busy = "another request held this agent's write lock past the lock timeout (on SQLite: the database's one writer lock); nothing was written: retry after Retry-After (a retry with the same Idempotency-Key is safe)"
            return JSONResponse(
                error_body("agent_busy", busy, None),
                status_code=503,
                headers={"Retry-After": str(AGENT_BUSY_RETRY_SECONDS)},
            )
        logger.error(
            "database unavailable",
            extra={"request_id": _request_id(request), "route": _route(request), "error_type": type(cause).__name__},
        )
        message = "the database is unavailable or did not answer in time; retry later (a retry with the same Idempotency-Key is safe)"
        return JSONResponse(
            error_body("database_unavailable", message, None),
            status_code=503,
            headers={"Retry-After": str(DATABASE_RETRY_SECONDS)},
        )

    @app.exception_handler(IntegrityError)
    async def _race(request: Request, error: IntegrityError) -> JSONResponse:
        logger.warning(
            "write conflict",
            extra={
                "request_id": _request_id(request),
                "route": _route(request),
                "error_type": type(error.orig).__name__,
            },
        )
        message = "a concurrent request wrote the same record first; nothing was changed by this one: retry"
        return JSONResponse(error_body("conflict", message, None), status_code=409, headers={"Retry-After": "1"})

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, error: Exception) -> JSONResponse:
        request_id = _request_id(request)
        logger.error(
            "unhandled error",
            exc_info=error,
            extra={"request_id": request_id, "route": _route(request), "error_type": type(error).__name__},
        )
        return JSONResponse(error_body("internal", f"internal error (request {request_id})", None), status_code=500)
