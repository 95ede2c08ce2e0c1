"""Structured logs: one JSON object per line on stderr.

A record carries its message and the request's fields (request id, method,
route, status, latency, error type). Tracebacks are logged as their frames and
the exception's type only: an exception's message can quote request content
(an experience's text, a name), which must never reach a log.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import traceback

__all__ = ["JsonFormatter", "configure_logging"]

FIELDS = ("request_id", "method", "path", "route", "status", "ms", "error_type", "error")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in FIELDS:
            if hasattr(record, key):
                entry[key] = getattr(record, key)
        if record.exc_info and record.exc_info[0] is not None:
            kind, _, trace = record.exc_info
            entry["error_type"] = kind.__name__
            entry["traceback"] = "".join(traceback.format_tb(trace))
        return json.dumps(entry)


class _AlreadyLogged(logging.Filter):
    """Drops uvicorn's own report of an exception the service has logged (without its content)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and record.getMessage().startswith("Exception in ASGI application"))


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("memtrial")
    logger.handlers[:] = [handler]
    logger.setLevel(level.upper())
    logger.propagate = False
    logging.getLogger("uvicorn.error").addFilter(_AlreadyLogged())
