"""Request bodies parsed strictly: JSON with finite numbers only, no NUL, no lone surrogates.

Python's ``json`` module accepts ``NaN``, ``Infinity`` and numbers that
overflow to infinity (``1e400``); a database then stores them as null or
refuses them after the request was accepted. Every route of the service uses
:class:`StrictJSONRoute`, whose requests parse JSON with :func:`strict_loads`:
such a body is refused before any handler runs, with a 422 that says where.
A query parameter the operation does not declare (a misspelt ``limit``, say)
is refused the same way instead of being ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

__all__ = ["StrictJSONRequest", "StrictJSONRoute", "strict_loads"]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are unique: a repeated key is refused (JSON leaves it undefined; Python keeps the last)."""
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return document


def strict_loads(body: bytes | str) -> Any:
    """``json.loads`` that refuses NaN, Infinity, repeated keys, nesting too deep to parse and invalid
    UTF-8, as JSONDecodeError.

    A number that overflows a 64-bit float parses as infinity, so the field that holds it is refused by
    its own validation, which names it (every number the service takes must be finite).
    """
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise json.JSONDecodeError("nests too deeply to parse", text, 0) from None
    except ValueError as error:
        if isinstance(error, json.JSONDecodeError):
            raise
        raise json.JSONDecodeError(str(error), text, 0) from None


#: bodies longer than this are parsed in a worker thread, not on the event loop
THREADED_BODY_BYTES = 64 * 1024


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = (
                    await run_in_threadpool(strict_loads, body)
                    if len(body) > THREADED_BODY_BYTES
                    else strict_loads(body)
                )
            except UnicodeDecodeError as error:
                raise json.JSONDecodeError(f"body is not UTF-8 ({error.reason})", "", error.start) from None
        return self._json


_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


def _depends_on(dependant: Dependant, call: Callable[..., Any]) -> bool:
    """Whether an operation depends on ``call`` (its dependencies' dependencies included)."""
    return any(d.call is call or _depends_on(d, call) for d in dependant.dependencies)


def _query_names(dependant: Dependant) -> frozenset[str]:
    """The query parameters an operation declares, its dependencies' included."""
    names = {parameter.alias for parameter in dependant.query_params}
    for dependency in dependant.dependencies:
        names |= _query_names(dependency)
    return frozenset(names)


class StrictJSONRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        from service.deps import authenticate_before_the_body, get_tenant

        handler = super().get_route_handler()
        declared = _query_names(self.dependant)
        takes = ", ".join(sorted(declared)) or "none"
        keyed = _depends_on(self.dependant, get_tenant)

        async def strict_handler(request: Request) -> Response:
            unknown = [name for name in dict.fromkeys(request.query_params) if name not in declared]
            if unknown:  # every one named, as every invalid body field is
                message = f"unknown query parameter (this operation takes: {takes})"
                raise RequestValidationError(
                    [
                        {
                            "type": "extra_forbidden",
                            "loc": ("query", name or "''"),
                            "msg": message,
                            "input": request.query_params[name],
                        }
                        for name in unknown
                    ]
                )
            if keyed and request.method in _WITH_BODY:  # the key first: no body is parsed for a client without one
                await run_in_threadpool(authenticate_before_the_body, request)
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict_handler
