"""Typed Python clients for the memtrial REST service (httpx): :class:`MemtrialClient` and :class:`AsyncMemtrialClient`.

    with MemtrialClient("http://127.0.0.1:8000", api_key) as client:
        agent = client.create_agent("fund", "balanced", universe)
        plan = client.create_decision(agent.id, when, maturity, "context")

    async with AsyncMemtrialClient("http://127.0.0.1:8000", api_key) as client:
        agent = await client.create_agent("fund", "balanced", universe)

Both clients share every operation (declared once, in the table of
:class:`~service.operations.Operations`: the HTTP method, the path and what each sends and answers) and
answer with the service's own models (:mod:`service.api_types`; each also
reads like a dict, ``agent["id"]``). An error answer raises
:class:`ServiceError` with its status, code, message and field.

Retries: a request that fails in transport, or is answered 429/502/503/504 with
no ``Retry-After`` or one of at most ``max_wait`` seconds, is sent again, up to
``retries`` times with a growing pause, except where sending it again could do
twice what the first attempt may have done: a lost answer, or a 502/503/504 that
is not the service's own refusal (a proxy's), or its 503 ``server_stopping`` (a
server that stopped mid-request), is resent only for a read (GET) or a keyed
call; and the service's own 502 (server drafting failed: the decision
failed, its model calls spent) is final. Every creating POST carries an
``Idempotency-Key`` generated once per call and reused by its retries, so a
retry can never create twice: the service answers it with the first answer.
A creating call takes a key of its own, ``idempotency_key=`` (1 to 200 letters, digits or ``_ . : -``),
and every error of one carries the key it was sent with (``error.idempotency_key``; a transport error too):
a call given up on (after its retries, or ``idempotency_in_progress`` past ``in_progress_wait``) is sent
again with that key, never as a new call, and the service answers it with the first answer.
A retry answered 409 ``idempotency_in_progress`` (the first attempt still runs,
or its server died and its lease has not yet ended) is sent again after the
``Retry-After`` it names (at most ``max_wait`` at a time), for up to
``in_progress_wait`` seconds in all: then it gets the first answer, or, once a
failed or dead first attempt has let go of the key, runs again.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import httpx
from pydantic import TypeAdapter

from service.api_types import AgentPublic, DecisionSummary, ExperiencePublic, LogEntryPublic
from service.operations import Awaiting, Blocking, Call, Operation, Operations, Sent, json_content

__all__ = ["AsyncMemtrialClient", "MemtrialClient", "Operation", "Operations", "Sent", "ServiceError"]

RETRY_STATUSES = frozenset({429, 502, 503, 504})
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class ServiceError(Exception):
    """An error answer of the service: ``{"error": {"code", "message", "field", "errors"}}``.

    ``message`` and ``field`` are the first error; ``errors`` lists every one the service found, each
    ``{"field": ..., "message": ...}`` (a request with several invalid fields names them all).
    ``request_id``: the ``X-Request-ID`` it answered with (its log lines carry it); ``retry_after``: the
    seconds its ``Retry-After`` asked to wait (a 429's rate limit, a 503's busy agent or unready server), or
    None; ``idempotency_key``: a creating call's key (None for any other call). A success the client cannot read as the service's answer (an empty or non-JSON body where the
    operation answers JSON: a proxy's page) is one too, with code ``not_json``.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None,
        errors: Sequence[Mapping[str, str | None]] | None = None,
        *,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.field = status, code, message, field
        self.errors: list[dict[str, str | None]] = (
            [{"field": field, "message": message}] if errors is None else [dict(e) for e in errors]
        )
        self.request_id, self.retry_after = request_id, retry_after
        self.idempotency_key: str | None = None  # a creating call's key, set by the client that sent it


def _sending(headers: dict[str, str], body: Any) -> dict[str, str]:
    """The headers of a request with ``body`` (sent as JSON when there is one)."""
    return headers if body is None else {**headers, "Content-Type": "application/json"}


def _decode(call: Call, response: httpx.Response) -> Any:
    status, request_id = response.status_code, response.headers.get("x-request-id")
    if status >= 400:
        header = response.headers.get("retry-after")
        said = {"request_id": request_id, "retry_after": None if header is None else _delay_seconds(header)}
        try:
            error = response.json()["error"]
            code, message = str(error["code"]), str(error["message"])
        except (ValueError, KeyError, TypeError):
            raise ServiceError(status, "http_error", response.text[:500], None, **said) from None
        raise ServiceError(status, code, message, error.get("field"), error.get("errors"), **said)
    if status == 204 or (call.model is None and not response.content):
        return None
    kind = response.headers.get("content-type") or "no content-type"
    if not kind.startswith("application/json") and call.model is None:
        return response.text  # a row that answers text (/metrics), or _request's raw answer
    try:
        if not kind.startswith("application/json") or not response.content:
            raise ValueError("not JSON")
        data = response.json()
    except ValueError:
        # an operation that answers JSON got a page, nothing or broken JSON (a proxy's, a load balancer's)
        body = repr(response.text[:200]) if response.content else "an empty body"
        raise ServiceError(
            status,
            "not_json",
            f"{call.method} {call.path}: the service answered {status} with {kind}, not its JSON answer: {body}",
            None,
            request_id=request_id,
        ) from None
    return data if call.model is None else TypeAdapter(call.model).validate_python(data)


class _Attempts:
    """The retry policy of one call, apart from any I/O: what to send, and after each outcome how long
    to wait before the next attempt (None: the outcome is final)."""

    def __init__(self, call: Call, retries: int, max_wait: float, in_progress_wait: float = 0.0) -> None:
        self.call, self.retries, self.max_wait, self.attempt = call, retries, max_wait, 0
        self.in_progress_left = in_progress_wait
        # the call's own key (``idempotency_key=``), else one made for its retries
        own = call.headers.get("Idempotency-Key")
        self.own_key = own is not None  # then even the first attempt may find it in progress (a call sent again)
        # every creating call carries a key, retries or not: its error hands it back, to send the call again with
        key = own or (str(uuid.uuid4()) if call.creates else None)
        self.headers = {**call.headers, "Idempotency-Key": key} if key is not None else dict(call.headers)

    def wait_after(self, outcome: httpx.Response | httpx.TransportError) -> float | None:
        if self._in_progress(outcome):  # our own key, held by an earlier attempt: wait for it to end
            assert isinstance(outcome, httpx.Response)
            pause = min(max(0.25, min(_retry_after(outcome, 1.0), self.max_wait)), self.in_progress_left)
            self.in_progress_left -= pause
            return pause
        if self.attempt >= self.retries:
            return None
        # resent without doing twice: a read (a GET, or a POST that writes nothing: a search, a rank), or a call
        # whose key makes the service answer a retry with the first
        resendable = self.call.method == "GET" or self.call.reads or "Idempotency-Key" in self.headers
        if isinstance(outcome, httpx.TransportError):
            if not resendable:  # a lost answer may hide a done change
                return None
            wait: float | None = min(0.25 * 2**self.attempt, self.max_wait)
        elif outcome.status_code not in RETRY_STATUSES:
            return None
        elif outcome.status_code == 502 and _refusal(outcome):
            return None  # the service's own: server drafting failed, the decision with it (its calls spent)
        elif outcome.status_code != 429 and not resendable and not _undone(outcome):
            return None  # a proxy's 502/503/504, or a server that stopped mid-request: the change may be done
        else:
            header = outcome.headers.get("retry-after")
            seconds = min(0.25 * 2**self.attempt, self.max_wait) if header is None else _delay_seconds(header)
            if seconds is None:  # neither seconds nor an HTTP date
                return None
            wait = seconds if seconds <= self.max_wait else None
        self.attempt += 1
        return wait

    def _in_progress(self, outcome: httpx.Response | httpx.TransportError) -> bool:
        if "Idempotency-Key" not in self.headers or self.in_progress_left <= 0:
            return False
        if self.attempt == 0 and not self.own_key:
            return False  # only a retry can find a key the client made in progress; the caller's, from the start
        if isinstance(outcome, httpx.TransportError) or outcome.status_code != 409:
            return False
        try:
            return bool(outcome.json()["error"]["code"] == "idempotency_in_progress")
        except (ValueError, KeyError, TypeError):
            return False

    def finish(self, outcome: httpx.Response | httpx.TransportError) -> Any:
        """The call's answer, or its error; a creating call's error carries the key it was sent with
        (``idempotency_key``), so the call can be sent again as the same request (``idempotency_key=``)."""
        key = self.headers.get("Idempotency-Key")
        if isinstance(outcome, httpx.TransportError):
            setattr(outcome, "idempotency_key", key)  # noqa: B010 (httpx's exception declares no such field)
            raise outcome
        try:
            return _decode(self.call, outcome)
        except ServiceError as error:
            error.idempotency_key = key
            raise


def _refusal(response: httpx.Response) -> bool:
    """Whether an answer is the service's own error (its envelope ``{"error": {"code": ...}}``), not a proxy's."""
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and isinstance(body.get("error"), dict) and "code" in body["error"]


#: the service's refusals that do not say nothing was written: a request a stopping server cut off may have
#: taken effect (it is resent only where resending cannot do it twice)
MAYBE_DONE = frozenset({"server_stopping"})


def _undone(response: httpx.Response) -> bool:
    """Whether an answer is the service's own refusal that wrote nothing (not a proxy's, not ``server_stopping``)."""
    if not _refusal(response):
        return False
    return response.json()["error"]["code"] not in MAYBE_DONE


def _delay_seconds(header: str) -> float | None:
    """A ``Retry-After`` value in seconds from now: a number of seconds, or an HTTP date (IMF-fixdate, e.g.
    ``Wed, 21 Oct 2015 07:28:00 GMT``: 0 once past); None for anything else."""
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    if not header.strip().endswith("GMT"):
        return None
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


def _retry_after(response: httpx.Response, default: float) -> float:
    header = response.headers.get("retry-after")
    seconds = None if header is None else _delay_seconds(header)
    return default if seconds is None else seconds


class _Page(Protocol[T_co]):
    """A page of a listing: its items and the cursor of the next (None: the last page)."""

    @property
    def items(self) -> Sequence[T_co]: ...

    @property
    def next_cursor(self) -> str | None: ...


class MemtrialClient(Blocking):
    """Synchronous client; pass ``http`` to reuse an ``httpx.Client`` (or a test client).

    ``base_url``: the service (``http://127.0.0.1:8000``); ``api_key``: a key from ``memtrial tenants
    create``; ``timeout``: seconds per attempt; ``retries``: how many times a call lost in transport or
    answered 429/502/503/504 is sent again (only where that cannot do twice what it did: see the module);
    ``max_wait``: the longest ``Retry-After`` waited for, in seconds (a longer one raises at once);
    ``in_progress_wait``: seconds in all a retry waits for its key's first attempt to finish. Each
    operation of the table below is a method; ``with MemtrialClient(...) as client:`` closes it."""

    def __init__(
        self,
        base_url: str = "",
        api_key: str | None = None,
        *,
        http: httpx.Client | None = None,
        timeout: float = 120.0,
        retries: int = 2,
        max_wait: float = 2.0,
        in_progress_wait: float = 60.0,
    ) -> None:
        self._http = http if http is not None else httpx.Client(base_url=base_url, timeout=timeout)
        self._headers = {} if api_key is None else {"Authorization": f"Bearer {api_key}"}
        self.retries, self.max_wait, self.in_progress_wait = retries, max_wait, in_progress_wait

    def close(self) -> None:
        """Close the connections (the ``httpx.Client`` given as ``http`` too)."""
        self._http.close()

    def __enter__(self) -> MemtrialClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _request(self, method: str, path: str, json: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        """Any request, answered with the decoded JSON body (no model, no retry)."""
        return _decode(
            Call(method, path),
            self._http.request(
                method, path, content=json_content(json), params=params, headers=_sending(self._headers, json)
            ),
        )

    def _run(self, call: Call) -> Any:
        attempts = _Attempts(call, self.retries, self.max_wait, self.in_progress_wait)
        content = json_content(call.body)
        while True:
            try:
                outcome: httpx.Response | httpx.TransportError = self._http.request(
                    call.method,
                    call.path,
                    content=content,
                    params=call.params,
                    headers={**_sending(self._headers, call.body), **attempts.headers},
                )
            except httpx.TransportError as error:
                outcome = error
            if (wait := attempts.wait_after(outcome)) is None:
                return attempts.finish(outcome)
            time.sleep(wait)

    def _pages(self, fetch: Callable[[str | None], _Page[T]]) -> Iterator[T]:
        cursor: str | None = None
        while True:
            page = fetch(cursor)
            yield from page.items
            cursor = page.next_cursor
            if cursor is None:
                return

    def iter_agents(self, *, name: str | None = None, page_size: int = 200) -> Iterator[AgentPublic]:
        """Every agent of the tenant, following the cursors."""
        return self._pages(lambda cursor: self.list_agents(limit=page_size, cursor=cursor, name=name))

    def iter_experiences(
        self, agent_id: str, *, active: bool | None = None, status: str | None = None, page_size: int = 200
    ) -> Iterator[ExperiencePublic]:
        """Every experience of an agent (``status``: active, quarantined or retired), following the cursors."""
        return self._pages(
            lambda cursor: self.list_experiences(agent_id, limit=page_size, active=active, cursor=cursor, status=status)
        )

    def iter_decisions(
        self, agent_id: str, *, status: str | None = None, page_size: int = 200
    ) -> Iterator[DecisionSummary]:
        """Every decision of an agent, oldest first (``status``: one state only), following the cursors."""
        return self._pages(lambda cursor: self.list_decisions(agent_id, limit=page_size, cursor=cursor, status=status))

    def iter_log(self, agent_id: str, *, page_size: int = 1000) -> Iterator[LogEntryPublic]:
        """Every log entry in index order (to re-verify the chain outside the service)."""
        return self._pages(lambda cursor: self.trust_log(agent_id, limit=page_size, cursor=cursor))


class AsyncMemtrialClient(Awaiting):
    """The same operations, awaited: ``await client.create_agent(...)``; ``async for d in client.iter_decisions(...)``.

    Its arguments are :class:`MemtrialClient`'s (``http``: an ``httpx.AsyncClient``); ``async with
    AsyncMemtrialClient(...) as client:`` closes it."""

    def __init__(
        self,
        base_url: str = "",
        api_key: str | None = None,
        *,
        http: httpx.AsyncClient | None = None,
        timeout: float = 120.0,
        retries: int = 2,
        max_wait: float = 2.0,
        in_progress_wait: float = 60.0,
    ) -> None:
        self._http = http if http is not None else httpx.AsyncClient(base_url=base_url, timeout=timeout)
        self._headers = {} if api_key is None else {"Authorization": f"Bearer {api_key}"}
        self.retries, self.max_wait, self.in_progress_wait = retries, max_wait, in_progress_wait

    async def aclose(self) -> None:
        """Close the connections (the ``httpx.AsyncClient`` given as ``http`` too)."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemtrialClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def _run(self, call: Call) -> Any:
        attempts = _Attempts(call, self.retries, self.max_wait, self.in_progress_wait)
        content = json_content(call.body)
        while True:
            try:
                outcome: httpx.Response | httpx.TransportError = await self._http.request(
                    call.method,
                    call.path,
                    content=content,
                    params=call.params,
                    headers={**_sending(self._headers, call.body), **attempts.headers},
                )
            except httpx.TransportError as error:
                outcome = error
            if (wait := attempts.wait_after(outcome)) is None:
                return attempts.finish(outcome)
            await asyncio.sleep(wait)

    async def _pages(self, fetch: Callable[[str | None], Awaitable[_Page[T]]]) -> AsyncIterator[T]:
        cursor: str | None = None
        while True:
            page = await fetch(cursor)
            for item in page.items:
                yield item
            cursor = page.next_cursor
            if cursor is None:
                return

    def iter_agents(self, *, name: str | None = None, page_size: int = 200) -> AsyncIterator[AgentPublic]:
        """Every agent of the tenant, following the cursors (``async for``)."""
        return self._pages(lambda cursor: self.list_agents(limit=page_size, cursor=cursor, name=name))

    def iter_experiences(
        self, agent_id: str, *, active: bool | None = None, status: str | None = None, page_size: int = 200
    ) -> AsyncIterator[ExperiencePublic]:
        """Every experience of an agent (``status``: active, quarantined or retired), following the cursors."""
        return self._pages(
            lambda cursor: self.list_experiences(agent_id, limit=page_size, active=active, cursor=cursor, status=status)
        )

    def iter_decisions(
        self, agent_id: str, *, status: str | None = None, page_size: int = 200
    ) -> AsyncIterator[DecisionSummary]:
        """Every decision of an agent, oldest first (``status``: one state only), following the cursors."""
        return self._pages(lambda cursor: self.list_decisions(agent_id, limit=page_size, cursor=cursor, status=status))

    def iter_log(self, agent_id: str, *, page_size: int = 1000) -> AsyncIterator[LogEntryPublic]:
        """Every log entry in index order (to re-verify the chain outside the service)."""
        return self._pages(lambda cursor: self.trust_log(agent_id, limit=page_size, cursor=cursor))
