"""Request body size limit for declared (Content-Length) and streamed (chunked) bodies."""

from __future__ import annotations

import json
from typing import Any

from service.errors import error_body

__all__ = ["BodyLimitMiddleware"]

Scope = dict[str, Any]


class BodyLimitMiddleware:
    """Answers 413 for a body that declares more than ``limit`` bytes (before
    reading it) or that streams more than ``limit`` bytes (as soon as it does)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._reject(send)
            return
        if declared is not None:
            await self.app(scope, receive, send)
            return
        messages, received = [], 0
        while True:  # a streamed body: read it to the limit before the app sees it
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            received += len(message.get("body", b""))
            if received > self.limit:
                await self._reject(send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Any:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _reject(self, send: Any) -> None:
        body = json.dumps(error_body("payload_too_large", f"request body exceeds {self.limit} bytes", "body")).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
