"""``HEAD`` is answered wherever ``GET`` is: the GET's status and headers, without its body (RFC 9110, 9.3.2).

The API's routes take the methods they declare and nothing else, so a load balancer's or an uptime monitor's
``HEAD /healthz`` was answered 405. A HEAD request now runs as the GET it asks about (the same authentication,
rate limit and validation, so the same status and headers, ``Content-Length`` included) and the answer's body
is dropped. The log, ``/metrics`` and a trace name the method the client sent (:func:`asked_method`), and a
405's ``Allow`` lists HEAD wherever it lists GET (:mod:`service.handlers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ASKED", "HeadMiddleware", "asked_method"]

ASKED = "memtrial.asked_method"  # the scope key that keeps HEAD for a request running as its GET


class HeadMiddleware:
    """The innermost layer: runs a HEAD request as a GET and drops the answer's body."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headless(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        # the request's own scope, changed in place: what routing writes there (the route the observer names in
        # the log and /metrics) reaches the layers outside as for any request. Its method is HEAD again once the
        # GET is done, whichever way it ends: an answer the layers outside send themselves (a 500 for an error
        # raised here, a 503 for a server stopping) then goes out without its body too, as the server sends a
        # HEAD's answer (the connection's HTTP/1.1 allows no body there)
        scope[ASKED], scope["method"] = "HEAD", "GET"
        try:
            await self.app(scope, receive, headless)
        finally:
            scope["method"] = "HEAD"


def asked_method(scope: Mapping[str, Any]) -> str:
    """The method the client sent (HEAD for a request that runs as its GET)."""
    return str(scope.get(ASKED) or scope["method"])
