"""The HTTP protocol ``memtrial serve`` runs: uvicorn's h11 protocol with a deadline for request heads.

uvicorn waits for a request's head as long as bytes keep coming (each byte
cancels its keep-alive timer), so a client that sends a header a byte a
second holds a connection for ever. Here a connection must deliver each
complete request head within ``MEMTRIAL_HEADER_TIMEOUT_SECONDS`` of opening
(or of the previous response), or it is closed. Bodies are guarded in the
application (:class:`service.limits.BodyLimitMiddleware`): a pause longer than
``MEMTRIAL_BODY_TIMEOUT_SECONDS`` between two parts of a body answers 408, so
a slow but steady upload within the body limit is served.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from service.settings import Settings

__all__ = ["GuardedH11Protocol"]


class GuardedH11Protocol(H11Protocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = Settings.from_env().header_timeout_seconds
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is in: the application takes it from here
            self._cancel_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        if self.header_timeout > 0:
            self._head_deadline = self.loop.call_later(self.header_timeout, self._head_expired)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_expired(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()
