"""One mapping from errors to HTTP: ``{"error": {"code", "message", "field", "errors"}}``.

``message`` and ``field`` describe the first thing wrong; ``errors`` lists every
one found, each ``{"field", "message"}`` (request validation reports all the
fields that broke a rule at once; other errors list the one). Core errors
(``MemtrialError``) map by class (the handlers live in :mod:`service.handlers`); request validation gives 422 with the
failing fields' paths (malformed JSON: ``invalid_json``; a body that is not a
JSON object, or sent without ``content-type: application/json``, says so); a database
that is down or too slow gives 503 ``database_unavailable`` with ``Retry-After``;
a lock wait that timed out (another request holds the agent: PostgreSQL's lock
timeout, SQLite's busy timeout) gives 503 ``agent_busy`` with ``Retry-After``; a
write that lost a race gives 409; anything unexpected gives 500, logged once with the request
id and the route and no request content.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from fastapi.responses import JSONResponse

__all__ = ["ApiError", "Replayed", "error_body", "is_lock_wait"]

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


class Replayed(Exception):
    """The stored first answer of a request retried with the same ``Idempotency-Key``."""

    def __init__(self, response: JSONResponse) -> None:
        super().__init__("replayed")
        self.response = response


def error_body(
    code: str, message: str, field: str | None, errors: list[dict[str, str | None]] | None = None
) -> dict[str, dict[str, Any]]:
    """The error answer; ``errors`` defaults to the one error (``field``, ``message``)."""
    listed = [{"field": field, "message": message}] if errors is None else errors
    return {"error": {"code": code, "message": message, "field": field, "errors": listed}}


def is_lock_wait(error: BaseException) -> bool:
    """Whether a database error is a lock wait that timed out (PostgreSQL lock_timeout, SQLite busy)."""
    if getattr(error, "sqlstate", None) == LOCK_NOT_AVAILABLE:
        return True
    return isinstance(error, sqlite3.OperationalError) and "locked" in str(error)
