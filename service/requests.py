"""Request bodies parsed strictly: JSON with finite numbers only, no NUL, no lone surrogates.

Python's ``json`` module accepts ``NaN``, ``Infinity`` and numbers that
overflow to infinity (``1e400``); a database then stores them as null or
refuses them after the request was accepted. Every route of the service uses
:class:`StrictJSONRoute`, whose requests parse JSON with :func:`strict_loads`:
such a body is refused before any handler runs, with a 422 that says where.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

__all__ = ["StrictJSONRequest", "StrictJSONRoute", "strict_loads"]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} overflows a 64-bit float")
    return value


def strict_loads(body: bytes | str) -> Any:
    """``json.loads`` that refuses NaN, Infinity, overflowing numbers and invalid UTF-8, as JSONDecodeError."""
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except ValueError as error:
        if isinstance(error, json.JSONDecodeError):
            raise
        raise json.JSONDecodeError(str(error), text, 0) from None


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = strict_loads(body)
            except UnicodeDecodeError as error:
                raise json.JSONDecodeError(f"body is not UTF-8 ({error.reason})", "", error.start) from None
        return self._json


class StrictJSONRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict_handler
