"""Request bodies read whole before the application sees them: size limit, read timeout, safe headers.

- a body that declares more than ``limit`` bytes (Content-Length) is refused
  before it is read, one that streams more as soon as it does: 413;
- a pause longer than ``body_timeout`` seconds between two parts of a body
  answers 408 and closes the connection (a slow but steady upload is served:
  the limit is on silence, not on the total time);
- a client that goes away mid-body gets nothing and nothing runs;
- every answer carries ``X-Content-Type-Options: nosniff`` and
  ``Referrer-Policy: no-referrer``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from service.errors import error_body

__all__ = ["BodyLimitMiddleware"]

Scope = dict[str, Any]
SAFE_HEADERS = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]


class BodyLimitMiddleware:
    def __init__(self, app: Any, limit: int, body_timeout: float = 0.0) -> None:
        self.app, self.limit, self.body_timeout = app, limit, body_timeout

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def guarded_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                message = {
                    **message,
                    "headers": [*message.get("headers", []), *(h for h in SAFE_HEADERS if h[0] not in names)],
                }
            await send(message)

        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._answer(guarded_send, 413, "payload_too_large", f"request body exceeds {self.limit} bytes")
            return
        messages, received = [], 0
        while True:  # read the body to its end (or the limit) before the app sees it
            try:
                message = await (asyncio.wait_for(receive(), self.body_timeout) if self.body_timeout > 0 else receive())
            except TimeoutError:
                await self._answer(
                    guarded_send,
                    408,
                    "request_timeout",
                    f"the request body paused for more than {self.body_timeout:g} s; send it again",
                    close=True,
                )
                return
            if message["type"] == "http.disconnect":
                return  # the client left before its request was complete: nothing to run, nobody to answer
            messages.append(message)
            received += len(message.get("body", b""))
            if received > self.limit:
                await self._answer(guarded_send, 413, "payload_too_large", f"request body exceeds {self.limit} bytes")
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Any:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, guarded_send)

    @staticmethod
    async def _answer(send: Any, status: int, code: str, message: str, close: bool = False) -> None:
        body = json.dumps(error_body(code, message, "body")).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if close:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
