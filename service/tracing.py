"""OpenTelemetry traces (the optional ``[otel]`` extra), configured by the standard ``OTEL_*`` variables.

Tracing is on when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (and
``OTEL_SDK_DISABLED`` is not ``true``): spans go over OTLP/HTTP in batches to that collector, named by
``OTEL_SERVICE_NAME`` (default ``memtrial``); every other ``OTEL_*`` variable of the SDK applies
(``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_BSP_SCHEDULE_DELAY``, ``OTEL_TRACES_SAMPLER``, ...).

Each request is a span (``POST /v1/agents/{agent_id}/decisions``, with its method, route and status),
and its children say where the time went: ``db.transaction`` (one per unit of work),
``embedding.encode``, ``retrieval.search``, ``engine.plan`` / ``engine.decide`` / ``engine.settle``,
and ``llm.completion`` (one per draft the model is asked for). With tracing off, :func:`span` costs one
attribute lookup.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

__all__ = ["request_span", "setup_tracing", "shutdown", "span"]

logger = logging.getLogger("memtrial.service")
_TRACER: Any = None
_PROVIDER: Any = None


def setup_tracing(service_name: str | None = None) -> bool:
    """Start exporting spans when the environment names an OTLP endpoint; True when tracing is on."""
    global _TRACER, _PROVIDER
    if _TRACER is not None:
        return True
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not endpoint or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    from memtrial.errors import import_extra

    import_extra("opentelemetry.sdk.trace", "otel", "OpenTelemetry traces")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = service_name or os.environ.get("OTEL_SERVICE_NAME") or "memtrial"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    _PROVIDER, _TRACER = provider, provider.get_tracer("memtrial")
    logger.info("tracing", extra={"endpoint": re.sub(r"//[^/@]*@", "//", endpoint)})  # without a user or password
    return True


def shutdown() -> None:
    """Send the spans still queued (at the end of the process)."""
    global _TRACER, _PROVIDER
    if _PROVIDER is not None:
        _PROVIDER.shutdown()
    _TRACER = _PROVIDER = None


def request_span(method: str, headers: Any) -> Any:
    """The span of one request, joined to the caller's trace when its ``traceparent`` names one."""
    if _TRACER is None:
        return nullcontext()
    from opentelemetry import propagate, trace

    return _TRACER.start_as_current_span(
        f"{method} request", context=propagate.extract(dict(headers)), kind=trace.SpanKind.SERVER
    )


@contextmanager
def _span(name: str, attributes: dict[str, Any]) -> Iterator[Any]:
    with _TRACER.start_as_current_span(name, attributes=attributes) as current:
        yield current


def span(name: str, **attributes: Any) -> Any:
    """A child span of the current one (a no-op context when tracing is off)."""
    if _TRACER is None:
        return nullcontext()
    return _span(name, {k: v for k, v in attributes.items() if v is not None})
