"""Structured logs: one JSON object per line on stderr, from the service and from every library it runs.

:func:`configure_logging` sends the ``memtrial`` loggers and the root logger (warnings and errors of
every library: the OpenTelemetry exporter, urllib3, Python's own warnings) through one JSON handler, and
``memtrial serve`` gives uvicorn :data:`UVICORN_LOG_CONFIG`, so nothing writes a plain-text line into the
stream (left alone, a library's record reaches Python's last-resort handler, which prints bare text).

A record carries its message and the request's fields (request id, method,
route, status, latency, error type). Tracebacks are logged as their frames and
the exception's type only: an exception's message can quote request content
(an experience's text, a name), which must never reach a log.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import traceback
from typing import Any

__all__ = ["REQUEST_ID", "UVICORN_LOG_CONFIG", "JsonFormatter", "adopt_library_logger", "configure_logging"]

FIELDS = (
    "request_id",
    "method",
    "path",
    "route",
    "status",
    "ms",
    "client",
    "endpoint",
    "error_type",
    "error",
    # the DEBUG records' (MEMTRIAL_LOG_LEVEL=DEBUG): what ran for a request, never what it carried
    "agent_id",
    "job_id",
    "source",
    "runs_on",
    "provider",
    "model",
    "attempt",
    "outcome",
)


#: the request being answered in this context (set by the app's observer): a record made while answering it
#: that names no request carries its id, so a DEBUG record of what ran can be told apart from another request's
REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("memtrial_request_id", default=None)


class _NamesItsRequest(logging.Filter):
    """Gives a record made while answering a request, and naming none, that request's id (as it is made, in the
    request's context: the threads it hands work to through ``run_in_threadpool`` too; a thread it starts
    itself, a lease's renewal say, does not carry it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id") and (current := REQUEST_ID.get()) is not None:
            record.request_id = current
        return True


logging.getLogger("memtrial.service").addFilter(_NamesItsRequest())


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
        return json.dumps(entry, default=str)  # a library's record may carry a field of any type


class _AlreadyLogged(logging.Filter):
    """Drops uvicorn's own report of an exception the service has logged (without its content)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and record.getMessage().startswith("Exception in ASGI application"))


#: uvicorn's own logging (``uvicorn.run(log_config=...)``, applied in every worker): its records go to
#: the root logger's JSON handler instead of its plain-text ones
UVICORN_LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": JsonFormatter}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
    "loggers": {name: {"handlers": [], "propagate": True} for name in ("uvicorn", "uvicorn.error", "uvicorn.access")},
}


def adopt_library_logger(name: str, *companions: str) -> None:
    """A library that sets up loggers of its own when imported (Dask's ``distributed``, and with it ``tornado``
    and ``bokeh``: plain-text handlers of their own, from INFO, not passed on) logs as every other: the records
    of ``name``, of every logger below it and of ``companions`` go to the service's JSON handler, from WARNING."""
    prefixes = tuple(f"{each}." for each in (name, *companions))
    below = [n for n in list(logging.root.manager.loggerDict) if n.startswith(prefixes)]
    for each in (name, *companions, *below):
        logger = logging.getLogger(each)
        logger.handlers[:] = []
        logger.propagate = True
        logger.setLevel(logging.NOTSET if each in below else logging.WARNING)


def configure_logging(level: str = "INFO") -> None:
    """JSON lines on stderr: the service's records from ``level``, every library's from WARNING."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("memtrial")
    logger.handlers[:] = [handler]
    logger.setLevel(level.upper())
    logger.propagate = False
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.captureWarnings(True)  # warnings.warn(...) becomes a record of the py.warnings logger
    logging.getLogger("uvicorn.error").addFilter(_AlreadyLogged())
