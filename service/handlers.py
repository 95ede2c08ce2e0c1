"""The service's exception handlers: each error class to its HTTP answer (see :mod:`service.errors`).

:func:`install_handlers` registers them on the app, most specific first; the
error bodies and the service's own exceptions live in :mod:`service.errors`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from prometheus_client import Counter
from sqlalchemy.exc import IntegrityError, InternalError, OperationalError, ProgrammingError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.concurrency import run_in_threadpool
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
from service.db import transaction
from service.errors import (
    AGENT_BUSY_RETRY_SECONDS,
    DATABASE_RETRY_SECONDS,
    ApiError,
    Replayed,
    error_body,
    is_lock_wait,
)
from service.models import IdempotencyRecord, utcnow
from service.schemas import FIXED_AGENT_SETTINGS
from service.store import as_utc

__all__ = ["install_handlers"]

logger = logging.getLogger("memtrial.service")
#: each 503 the database caused: a lock wait (``agent_busy``), the pool's checkout timeout, any other failure
DATABASE_ERRORS = Counter(
    "memtrial_database_errors_total", "Requests answered 503 because of the database, by kind", ["kind"]
)

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


#: the core's parameter names where a request names the field otherwise (the engine's ``at`` is ``settled_at``,
#: a plan's ``time`` its ``decision_time``)
_REQUEST_FIELDS = {"at": "settled_at", "time": "decision_time"}

#: Names of union members that pydantic puts into error locations; they are not fields.
_UNION_MEMBERS = frozenset({"ExperienceCreate", "ExperienceBatch", "single", "batch"})


def _field_of(location: tuple[int | str, ...]) -> str:
    """The field an error location names: without where it was sent (its first part: ``body``, ``query``,
    ``path``, ``header``, ``cookie``) or union members' names; a body field may itself be named ``query``."""
    where = location[1:] if location and location[0] in ("body", "query", "path", "header", "cookie") else location
    parts = [str(p) for p in where if p not in _UNION_MEMBERS]
    return ".".join(parts) or "body"


#: pydantic's error types for a body that is not a JSON object
_NOT_AN_OBJECT = frozenset({"model_attributes_type", "dict_type", "model_type"})


def _sent(request: Request, value: Any) -> str:
    """What a body that is not a JSON object was, in words."""
    content_type = request.headers.get("content-type")
    if content_type is None:
        return "no content-type"
    if "json" not in content_type.lower():
        return f"content-type {content_type!r}"
    kinds = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "JSON null" if value is None else f"a JSON {kinds.get(type(value), 'value')}"


def _described(request: Request, item: Mapping[str, Any]) -> tuple[str, str]:
    """(field, message) of one validation error."""
    location = tuple(item.get("loc", ()))
    field = _field_of(location)
    if location and location[0] == "header":
        field = str(location[-1]).replace("_", "-").title() if isinstance(location[-1], str) else field
    if field == "body" and item.get("type") in _NOT_AN_OBJECT:
        got = _sent(request, item.get("input"))
        return field, f"body: send a JSON object with content-type: application/json (got {got})"
    if item.get("type") == "extra_forbidden" and _is_agent_patch(request) and field in FIXED_AGENT_SETTINGS:
        return (
            field,
            f"{field}: fixed when the agent was created ({FIXED_AGENT_SETTINGS[field]}); PATCH changes name, drafter, draft_budget, draft_horizon, retrieval and quarantine",
        )
    message = str(item.get("msg", "invalid value"))
    if item.get("type") == "value_error":  # a validator's own words, without pydantic's "Value error, " before them
        message = message.removeprefix("Value error, ")
    return field, f"{field}: {message}"


def _request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", "-"))


def _route(request: Request) -> str:
    return str(getattr(request.scope.get("route"), "path", "unmatched"))


def _is_agent_patch(request: Request) -> bool:
    return request.method == "PATCH" and _route(request) == "/v1/agents/{agent_id}"


async def _replayed(request: Request, replayed: Replayed) -> JSONResponse:
    request_id = getattr(request.state, "request_id", None)
    logger.debug("answered with the first answer to its Idempotency-Key", extra={"request_id": request_id})
    return replayed.response


async def _api(_: Request, error: ApiError) -> JSONResponse:
    headers = {} if error.retry_after is None else {"Retry-After": str(error.retry_after)}
    if error.status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="memtrial"'
    return JSONResponse(
        error_body(error.code, error.message, error.field), status_code=error.status, headers=headers or None
    )


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
            field = _REQUEST_FIELDS.get(error.field or "", error.field)
            return JSONResponse(error_body(code, error.message, field), status_code=status)
    raise AssertionError("unreachable")  # pragma: no cover


async def _validation(request: Request, error: RequestValidationError) -> JSONResponse:
    found = error.errors()
    first = found[0]
    if first.get("type") == "json_invalid":
        detail = first.get("ctx", {}).get("error", "malformed")
        return JSONResponse(error_body("invalid_json", f"body: not valid JSON ({detail})", "body"), status_code=422)
    listed: list[dict[str, str | None]] = []
    for item in found:
        field, message = _described(request, item)
        if {"field": field, "message": message} not in listed:
            listed.append({"field": field, "message": message})
    head = listed[0]
    return JSONResponse(error_body("invalid", str(head["message"]), head["field"], listed), status_code=422)


async def _http(request: Request, error: StarletteHTTPException) -> JSONResponse:
    code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized"}.get(error.status_code, "http_error")
    message = str(error.detail)
    # the router's own answers name the request, so a client whose base address holds a path (`.../v1`) sees why
    if error.status_code == 404 and message == "Not Found":
        message = (
            f"nothing at {request.method} {request.url.path} on this service (its API: /docs and /openapi.json; "
            "an agent's dashboard: /dashboard/{agent_id})"
        )
    headers = dict(getattr(error, "headers", None) or {})
    if error.status_code == 405 and message == "Method Not Allowed":
        # the router's Allow names the methods of the first route whose path matched; the path has them all
        allowed = _methods_at(request) or [m.strip() for m in headers.get("Allow", "").split(",") if m.strip()]
        if "GET" in allowed and "HEAD" not in allowed:  # HEAD is taken wherever GET is (service.head)
            allowed = sorted([*allowed, "HEAD"])
        message = f"{request.url.path} does not take {request.method}; it takes {', '.join(allowed)}"
        headers["Allow"] = ", ".join(allowed)
    return JSONResponse(error_body(code, message, None), status_code=error.status_code, headers=headers or None)


_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def _methods_at(request: Request) -> list[str]:
    """Every method the API takes at the request's path (from its OpenAPI paths, read once per app)."""
    table = getattr(request.app.state, "methods_by_path", None)
    if table is None:
        from starlette.routing import compile_path

        table = [
            (compile_path(path)[0], {m.upper() for m in operations if m in _HTTP_METHODS})
            for path, operations in request.app.openapi()["paths"].items()
        ]
        request.app.state.methods_by_path = table
    return sorted({m for pattern, methods in table if pattern.match(request.url.path) for m in methods})


#: what a database that refuses writes says (SQLite's words, PostgreSQL's SQLSTATE): an operator must act
_STORAGE_WORDS = (
    ("readonly database", "the database is read-only"),
    ("database or disk is full", "the database's disk is full"),
    ("disk i/o error", "the database's disk failed a read or a write"),
)
_STORAGE_STATES = {
    "25006": "the database is read-only",
    "53100": "the database's disk is full",
    # a schema older than the code (a database migrated down under a live replica): unready, as /readyz says
    "42P01": "the database's schema lacks a table this release needs (it is older than the release: see /readyz)",
    "42703": "the database's schema lacks a column this release needs (it is older than the release: see /readyz)",
}


def _storage_refusal(cause: BaseException) -> str | None:
    """Why the database refused to store anything, where it said so (read-only, disk full), else None."""
    state = getattr(cause, "sqlstate", None)
    if state in _STORAGE_STATES:
        return _STORAGE_STATES[state]
    text = str(cause).lower()
    return next((why for words, why in _STORAGE_WORDS if words in text), None)


async def _database_down(request: Request, error: Exception) -> JSONResponse:
    cause = getattr(error, "orig", None) or error
    if is_lock_wait(cause):
        DATABASE_ERRORS.labels(kind="agent_busy").inc()
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
    DATABASE_ERRORS.labels(kind="pool_timeout" if isinstance(error, PoolTimeoutError) else "unavailable").inc()
    refused = _storage_refusal(cause)
    logger.error(
        "database unavailable" if refused is None else "database refuses writes",
        extra={
            "request_id": _request_id(request),
            "route": _route(request),
            "error_type": type(cause).__name__,
            **({} if refused is None else {"reason": refused}),
        },
    )
    message = (
        "the database is unavailable or did not answer in time; retry later (a retry with the same Idempotency-Key is safe)"
        if refused is None
        else f"{refused}, so nothing was written; retry once it is fixed (a retry with the same Idempotency-Key is safe)"
    )
    return JSONResponse(
        error_body("database_unavailable", message, None),
        status_code=503,
        headers={"Retry-After": str(DATABASE_RETRY_SECONDS)},
    )


def _key_taken(request: Request, key: str) -> bool:
    """Whether another request holds this request's Idempotency-Key (read afresh, after the collision): only on
    a route that takes the key (its guard is on the request), and not this request's own claim (one it took
    over from an expired lease is restored by the rollback)."""
    guard = getattr(request.state, "idempotency", None)
    tenant_id = getattr(request.state, "tenant_id", None)
    if guard is None or guard.key != key or tenant_id is None:
        return False
    try:
        with transaction(request.app.state.services.sessions) as session:
            found = session.get(IdempotencyRecord, (tenant_id, key))
            if found is None or found.holder == guard.holder:
                return False
            # answered, or claimed under a lease still running (an expired claim is no one's)
            return found.response is not None or (
                found.lease_until is not None and as_utc(found.lease_until) > utcnow()
            )
    except Exception:  # the plain conflict is still the right answer
        return False


async def _race(request: Request, error: IntegrityError) -> JSONResponse:
    logger.warning(
        "write conflict",
        extra={
            "request_id": _request_id(request),
            "route": _route(request),
            "error_type": type(error.orig).__name__,
        },
    )
    key = request.headers.get("Idempotency-Key")
    if key is not None and await run_in_threadpool(_key_taken, request, key):
        # the same key's first request (on another replica, say) wrote while this one ran, both having found
        # the key free: answered as a key in progress, which a client waits on, and its retry gets the first
        # answer (or idempotency_conflict for another body); a plain conflict no client waited on
        message = f"the first request with Idempotency-Key {key!r} has not finished; retry later"
        return JSONResponse(
            error_body("idempotency_in_progress", message, "Idempotency-Key"),
            status_code=409,
            headers={"Retry-After": "1"},
        )
    message = "a concurrent request wrote the same record first; nothing was changed by this one: retry"
    return JSONResponse(error_body("conflict", message, None), status_code=409, headers={"Retry-After": "1"})


async def _unexpected(request: Request, error: Exception) -> JSONResponse:
    request_id = _request_id(request)
    logger.error(
        "unhandled error",
        exc_info=error,
        extra={"request_id": request_id, "route": _route(request), "error_type": type(error).__name__},
    )
    return JSONResponse(
        error_body("internal", f"internal error (request {request_id})", None),
        status_code=500,
        headers={"X-Request-ID": request_id},  # answered outside the middleware that sets it on every other answer
    )


#: PostgreSQL's errors of the 'internal' class that end a session the server gave up on: answered as an outage
_SESSION_ENDED = {
    "25P03": "idle in a transaction past idle_in_transaction_session_timeout",
    "25P04": "in a transaction past transaction_timeout",
}


async def _internal(request: Request, error: Exception) -> JSONResponse:
    """A database error of the 'internal' or 'programming' class: a refusal to store (PostgreSQL's read-only
    transaction of a standby, SQLSTATE 25006; a schema older than the release, 42P01 or 42703) or a session the
    server ended (the service's own idle-in-transaction timeout, 25P03, after the process stalled) is answered as
    an outage; any other is unexpected, raised on to be logged, counted and answered as every unexpected error is."""
    cause = getattr(error, "orig", None) or error
    if _storage_refusal(cause) is not None or getattr(cause, "sqlstate", None) in _SESSION_ENDED:
        return await _database_down(request, error)
    raise error


#: Each error class and its handler, in the order they were registered.
_HANDLERS: list[tuple[type[Exception], Any]] = [
    (Replayed, _replayed),
    (ApiError, _api),
    (MemtrialError, _core),
    (RequestValidationError, _validation),
    (StarletteHTTPException, _http),
    (PoolTimeoutError, _database_down),
    (OperationalError, _database_down),
    (InternalError, _internal),
    (ProgrammingError, _internal),
    (IntegrityError, _race),
    (Exception, _unexpected),
]


def install_handlers(app: FastAPI) -> None:
    """Register every handler on ``app``."""
    for error_class, handler in _HANDLERS:
        app.add_exception_handler(error_class, handler)
