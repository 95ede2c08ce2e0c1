"""A request the server stops in the middle of gets a JSON answer, not the ASGI server's plain-text 500.

On SIGTERM the server stops taking connections and gives open requests ``MEMTRIAL_SHUTDOWN_SECONDS`` to
finish; one still running then (a server-drafted decision waiting on its model, say) is cancelled. Its client
gets 503 ``server_stopping`` with ``Retry-After``, ``Connection: close`` and its ``X-Request-ID`` (the request
is logged and counted with that status like any other). Work a request had handed to a thread may still
finish after the answer, so the answer does not say it failed: it says to send the request again, with the same
``Idempotency-Key``, to a replica that is up (a retry with the key gets the first answer if there was one; a
server-drafted decision's plan is withdrawn and its key released, so its retry plans afresh).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from service.errors import error_body
from service.limits import SAFE_HEADERS

__all__ = ["STOPPING_RETRY_SECONDS", "StoppingMiddleware"]

STOPPING_RETRY_SECONDS = 1
STOPPING_MESSAGE = (
    "the server stopped before this request finished (it may have taken effect or not): send it again, with the same "
    "Idempotency-Key, to a server that is up"
)


class StoppingMiddleware:
    """The outermost layer: answers a request cancelled before its answer started (the server stopping)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except asyncio.CancelledError:
            if started:  # part of the answer went out: the connection closes on it
                raise
            # the cancellation was the server's, delivered once: the answer is sent, and the request ends here
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            body = json.dumps(error_body("server_stopping", STOPPING_MESSAGE, None)).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(STOPPING_RETRY_SECONDS).encode()),
                (b"connection", b"close"),
                *SAFE_HEADERS,
            ]
            request_id = scope.get("state", {}).get("request_id")
            if request_id:
                headers.append((b"x-request-id", str(request_id).encode()))
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": body})
