"""One mapping from errors to HTTP: ``{"error": {"code", "message", "field"}}``.

Core errors (``MemtrialError``) map by class; request validation gives 422
with the failing field's path; anything unexpected gives 500 without details.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
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

__all__ = ["ApiError", "error_body", "install_handlers"]

logger = logging.getLogger("memtrial.service")


class ApiError(Exception):
    """An error the service raises itself, with its HTTP status."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field


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
_UNION_MEMBERS = frozenset({"ExperienceCreate", "ExperienceBatch"})


def _field_of(location: tuple[int | str, ...]) -> str:
    parts = [str(p) for p in location if p not in ("body", "query", "path") and p not in _UNION_MEMBERS]
    return ".".join(parts) or "body"


def install_handlers(app: FastAPI) -> None:

    @app.exception_handler(ApiError)
    async def _api(_: Request, error: ApiError) -> JSONResponse:
        return JSONResponse(error_body(error.code, error.message, error.field), status_code=error.status)

    @app.exception_handler(MemtrialError)
    async def _core(_: Request, error: MemtrialError) -> JSONResponse:
        for kind, status, code in _CORE_STATUS:
            if isinstance(error, kind):
                if status >= 500:
                    logger.error("core state error: %s", error.message)
                return JSONResponse(error_body(code, error.message, error.field), status_code=status)
        raise AssertionError("unreachable")  # pragma: no cover

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0]
        field = _field_of(tuple(first.get("loc", ())))
        message = f"{field}: {first.get('msg', 'invalid value')}"
        return JSONResponse(error_body("invalid", message, field), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, error: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized"}.get(error.status_code, "http_error")
        return JSONResponse(error_body(code, str(error.detail), None), status_code=error.status_code)

    @app.exception_handler(OperationalError)
    async def _database_down(_: Request, error: OperationalError) -> JSONResponse:
        logger.error("database unavailable: %s", type(error.orig).__name__ if error.orig is not None else "unknown")
        message = "the database is unavailable; nothing was changed, retry later"
        return JSONResponse(error_body("database_unavailable", message, None), status_code=503, headers={"Retry-After": "5"})

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, error: Exception) -> JSONResponse:
        logger.exception("unhandled error")
        return JSONResponse(error_body("internal", "internal error", None), status_code=500)
