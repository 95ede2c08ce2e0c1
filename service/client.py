"""Typed Python clients for the memtrial REST service (httpx): :class:`MemtrialClient` and :class:`AsyncMemtrialClient`.

    with MemtrialClient("http://127.0.0.1:8000", api_key) as client:
        agent = client.create_agent("fund", "balanced", universe)
        plan = client.create_decision(agent.id, when, maturity, "context")

    async with AsyncMemtrialClient("http://127.0.0.1:8000", api_key) as client:
        agent = await client.create_agent("fund", "balanced", universe)

Both clients share every operation (defined once, in :class:`Operations`) and
answer with the service's own models (:mod:`service.api_types`; each also
reads like a dict, ``agent["id"]``). An error answer raises
:class:`ServiceError` with its status, code, message and field.

Retries: a request that fails in transport, or is answered 429/502/503/504 with
no ``Retry-After`` or one of at most ``max_wait`` seconds, is sent again, up to
``retries`` times with a growing pause. Every creating POST carries an
``Idempotency-Key`` generated once per call and reused by its retries, so a
retry can never create twice: the service answers it with the first answer.
A retry answered 409 ``idempotency_in_progress`` (the first attempt still runs,
or its server died and its lease has not yet ended) is sent again after the
``Retry-After`` it names (at most ``max_wait`` at a time), for up to
``in_progress_wait`` seconds in all: then it gets the first answer, or, once a
failed or dead first attempt has let go of the key, runs again.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import TypeAdapter

from service.api_types import (
    AgentList,
    AgentPublic,
    DecisionList,
    DecisionPublic,
    DecisionRecord,
    ExperienceDetail,
    ExperienceList,
    ExperiencePublic,
    LogPage,
    PlanPublic,
    ProvidersPublic,
    RefitPublic,
    SearchResult,
    SettlementPublic,
    TrustPublic,
    ValuesPublic,
    VerifyPublic,
)

__all__ = ["AsyncMemtrialClient", "MemtrialClient", "Operations", "ServiceError"]

RETRY_STATUSES = frozenset({429, 502, 503, 504})


class ServiceError(Exception):
    """An error answer of the service: ``{"error": {"code", "message", "field", "errors"}}``.

    ``message`` and ``field`` are the first error; ``errors`` lists every one the service found, each
    ``{"field": ..., "message": ...}`` (a request with several invalid fields names them all).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None,
        errors: Sequence[Mapping[str, str | None]] | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.field = status, code, message, field
        self.errors: list[dict[str, str | None]] = (
            [{"field": field, "message": message}] if errors is None else [dict(e) for e in errors]
        )


def _time(value: dt.datetime | str) -> str:
    return value.isoformat() if isinstance(value, dt.datetime) else value


def _segment(value: str, name: str) -> str:
    """An id as one path segment: a non-empty string without '/' (ValueError naming the parameter otherwise),
    percent-encoded, so no id can reach another resource."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if "/" in value or "\\" in value:
        raise ValueError(f"{name} must be a single id, not a path: got {value!r}")
    if value in (".", ".."):
        raise ValueError(f"{name} must be an id, got {value!r}")
    return quote(value, safe="")


def _outcome_body(
    prices: Mapping[str, Sequence[float]] | None,
    returns: Mapping[str, Sequence[float]] | None,
    utilities: Sequence[float] | None,
    outcome: Any,
    rule: str | None,
    settled_at: dt.datetime | str | None,
) -> dict[str, Any]:
    """The body of a settle or a correction."""
    body: dict[str, Any] = {}
    if prices is not None:
        body["prices"] = {asset: list(values) for asset, values in prices.items()}
    if returns is not None:
        body["returns"] = {asset: list(values) for asset, values in returns.items()}
    if utilities is not None:
        body["utilities"] = [float(u) for u in utilities]
    if rule is not None:
        body["rule"], body["outcome"] = rule, outcome
    if settled_at is not None:
        body["settled_at"] = _time(settled_at)
    return body


class _Keep(Enum):
    """A setting left as it is (``None`` is a value: it sets the setting aside)."""

    KEEP = "keep"


_KEEP = _Keep.KEEP


def _params(**values: Any) -> dict[str, Any]:
    """Query parameters without the unset ones."""
    return {name: value for name, value in values.items() if value is not None}


@dataclass(frozen=True, slots=True)
class Call:
    """One request: what to send, what model the answer is, whether it creates (and so carries a key)."""

    method: str
    path: str
    body: Any = None
    params: Mapping[str, Any] | None = None
    model: Any = None  # a Pydantic model, or None for the decoded body as it is
    creates: bool = False
    headers: dict[str, str] = field(default_factory=dict)


def _decode(call: Call, response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            error = response.json()["error"]
        except (ValueError, KeyError, TypeError):
            raise ServiceError(response.status_code, "http_error", response.text[:500], None) from None
        raise ServiceError(
            response.status_code, error["code"], error["message"], error.get("field"), error.get("errors")
        )
    if response.status_code == 204 or not response.content:
        return None
    if not response.headers.get("content-type", "").startswith("application/json"):
        return response.text
    data = response.json()
    return data if call.model is None else TypeAdapter(call.model).validate_python(data)


class _Attempts:
    """The retry policy of one call, apart from any I/O: what to send, and after each outcome how long
    to wait before the next attempt (None: the outcome is final)."""

    def __init__(self, call: Call, retries: int, max_wait: float, in_progress_wait: float = 0.0) -> None:
        self.call, self.retries, self.max_wait, self.attempt = call, retries, max_wait, 0
        self.in_progress_left = in_progress_wait
        key = str(uuid.uuid4()) if call.creates and retries else None
        self.headers = {**call.headers, "Idempotency-Key": key} if key is not None else dict(call.headers)

    def wait_after(self, outcome: httpx.Response | httpx.TransportError) -> float | None:
        if self._in_progress(outcome):  # our own key, held by an earlier attempt: wait for it to end
            assert isinstance(outcome, httpx.Response)
            pause = min(max(0.25, min(_retry_after(outcome, 1.0), self.max_wait)), self.in_progress_left)
            self.in_progress_left -= pause
            return pause
        if self.attempt >= self.retries:
            return None
        if isinstance(outcome, httpx.TransportError):
            if self.call.method in ("PATCH", "DELETE"):  # not keyed: a lost answer may hide a done change
                return None
            wait: float | None = min(0.25 * 2**self.attempt, self.max_wait)
        elif outcome.status_code not in RETRY_STATUSES:
            return None
        else:
            header = outcome.headers.get("retry-after")
            try:
                wanted = float(header) if header is not None else min(0.25 * 2**self.attempt, self.max_wait)
            except ValueError:
                return None
            wait = wanted if wanted <= self.max_wait else None
        self.attempt += 1
        return wait

    def _in_progress(self, outcome: httpx.Response | httpx.TransportError) -> bool:
        if "Idempotency-Key" not in self.headers or self.attempt == 0 or self.in_progress_left <= 0:
            return False  # only a retry of ours can find its own key in progress
        if isinstance(outcome, httpx.TransportError) or outcome.status_code != 409:
            return False
        try:
            return bool(outcome.json()["error"]["code"] == "idempotency_in_progress")
        except (ValueError, KeyError, TypeError):
            return False

    def finish(self, outcome: httpx.Response | httpx.TransportError) -> Any:
        if isinstance(outcome, httpx.TransportError):
            raise outcome
        return _decode(self.call, outcome)


def _retry_after(response: httpx.Response, default: float) -> float:
    try:
        return max(0.0, float(response.headers.get("retry-after", default)))
    except ValueError:
        return default


class Operations:
    """Every operation of the API, once. A client supplies :meth:`_run` (and the paging iterators)."""

    def _run(self, call: Call) -> Any:
        raise NotImplementedError

    # -- service ----------------------------------------------------------------
    def health(self) -> Any:
        return self._run(Call("GET", "/healthz"))

    def ready(self) -> Any:
        return self._run(Call("GET", "/readyz"))

    def metrics(self) -> Any:
        return self._run(Call("GET", "/metrics"))

    def providers(self) -> Any:
        """The LLM providers and models this server allows for server drafting."""
        return self._run(Call("GET", "/v1/llm/providers", model=ProvidersPublic))

    # -- agents -----------------------------------------------------------------
    def create_agent(
        self,
        name: str,
        investor: str | None = None,
        universe: Sequence[Mapping[str, str]] | None = None,
        *,
        kind: str = "portfolio",
        outcomes: Sequence[str] | None = None,
        design: str = "half",
        k: int = 4,
        gate: Mapping[str, Any] | None = None,
        learner: str = "auto",
        fallback: str = "ftrl",
        fee_bp: float = 15.0,
        drafter: Mapping[str, Any] | None = None,
        action: str = "gate",
        credit: str = "centred",
        robust: bool = True,
        draft_budget: float | None = None,
        reference: str = "given",
        answer: Mapping[str, Any] | None = None,
        draft_horizon: int | None = None,
    ) -> Any:
        """A portfolio agent (investor and universe) or, with ``kind="scored"``, a scored one (``outcomes``
        names the outcomes of probability forecasts). Answers :class:`~service.api_types.AgentPublic`.
        ``draft_budget``: LLM draft calls per decision on average (each plan lists the drafts to make);
        ``draft_horizon``: the number of decisions it covers (trials then come first).
        ``answer``: a scored agent's drafts for server drafting (``{"type": "number", "minimum": 0}``, ...)."""
        body: dict[str, Any] = {
            "name": name,
            "kind": kind,
            "design": design,
            "learner": learner,
            "fallback": fallback,
            "fee_bp": fee_bp,
            "action": action,
            "credit": credit,
        }
        if not robust:
            body["robust"] = False
        if k != 4:
            body["k"] = k
        if reference != "given":
            body["reference"] = reference
        optional = {
            "draft_budget": draft_budget,
            "draft_horizon": draft_horizon,
            "investor": investor,
            "universe": None if universe is None else list(universe),
            "outcomes": None if outcomes is None else list(outcomes),
        }
        body.update({key: value for key, value in optional.items() if value is not None})
        if gate is not None:
            body["gate"] = dict(gate)
        if drafter is not None:
            body["drafter"] = dict(drafter)
        if answer is not None:
            body["answer"] = dict(answer)
        return self._run(Call("POST", "/v1/agents", body, model=AgentPublic, creates=True))

    def get_agent(self, agent_id: str) -> Any:
        return self._run(Call("GET", f"/v1/agents/{_segment(agent_id, 'agent_id')}", model=AgentPublic))

    def update_agent(
        self,
        agent_id: str,
        *,
        name: str | None = None,
        drafter: Mapping[str, Any] | None = None,
        remove_drafter: bool = False,
        draft_budget: float | None | _Keep = _KEEP,
        draft_horizon: int | None | _Keep = _KEEP,
    ) -> Any:
        """Rename the agent, change its drafter or its draft budget and horizon (from the next plan on;
        ``None`` sets the budget or horizon aside; left out, each stays as it is)."""
        body: dict[str, Any] = _params(name=name, drafter=None if drafter is None else dict(drafter))
        if remove_drafter:
            body["remove_drafter"] = True
        if not isinstance(draft_budget, _Keep):
            body["draft_budget"] = draft_budget
        if not isinstance(draft_horizon, _Keep):
            body["draft_horizon"] = draft_horizon
        return self._run(Call("PATCH", f"/v1/agents/{_segment(agent_id, 'agent_id')}", body, model=AgentPublic))

    def list_agents(self, *, limit: int = 50, cursor: str | None = None, name: str | None = None) -> Any:
        """One page of the tenant's agents (:class:`~service.api_types.AgentList`)."""
        return self._run(
            Call("GET", "/v1/agents", params=_params(limit=limit, cursor=cursor, name=name), model=AgentList)
        )

    def delete_agent(self, agent_id: str) -> Any:
        """Delete the agent and everything it owns (irreversible)."""
        return self._run(Call("DELETE", f"/v1/agents/{_segment(agent_id, 'agent_id')}"))

    # -- experiences ------------------------------------------------------------
    def add_experience(
        self,
        agent_id: str,
        text: str,
        metadata: Mapping[str, Any] | None = None,
        structured: Mapping[str, Any] | None = None,
        external_id: str | None = None,
    ) -> Any:
        """Add one experience; with an ``external_id`` the agent already holds, update that one instead
        (the answer's ``write`` says created, updated or unchanged)."""
        body = {
            "text": text,
            "metadata": dict(metadata or {}),
            "structured": None if structured is None else dict(structured),
        }
        if external_id is not None:
            body["external_id"] = external_id
        return self._run(
            Call(
                "POST",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/experiences",
                body,
                model=ExperiencePublic,
                creates=True,
            )
        )

    def add_experiences(self, agent_id: str, experiences: Sequence[Mapping[str, Any] | str]) -> Any:
        """A batch (texts, or objects with ``text`` and optional ``metadata``/``structured``/``external_id``)."""
        items = [{"text": item} if isinstance(item, str) else dict(item) for item in experiences]
        return self._run(
            Call(
                "POST",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/experiences",
                {"experiences": items},
                model=ExperienceList,
                creates=True,
            )
        )

    def list_experiences(
        self,
        agent_id: str,
        *,
        limit: int = 50,
        offset: int = 0,
        active: bool | None = None,
        cursor: str | None = None,
        external_id: str | None = None,
    ) -> Any:
        params = _params(
            limit=limit,
            offset=offset or None,
            cursor=cursor,
            active=None if active is None else str(active).lower(),
            external_id=external_id,
        )
        return self._run(
            Call("GET", f"/v1/agents/{_segment(agent_id, 'agent_id')}/experiences", params=params, model=ExperienceList)
        )

    def get_experience(self, agent_id: str, experience_id: str) -> Any:
        return self._run(
            Call(
                "GET",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/experiences/{_segment(experience_id, 'experience_id')}",
                model=ExperienceDetail,
            )
        )

    def update_experience(self, agent_id: str, experience_id: str, metadata: Mapping[str, Any]) -> Any:
        return self._run(
            Call(
                "PATCH",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/experiences/{_segment(experience_id, 'experience_id')}",
                {"metadata": dict(metadata)},
                model=ExperiencePublic,
            )
        )

    def retire_experience(self, agent_id: str, experience_id: str) -> Any:
        return self._run(
            Call(
                "POST",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/experiences/{_segment(experience_id, 'experience_id')}/retire",
                model=ExperiencePublic,
            )
        )

    def delete_experience(self, agent_id: str, experience_id: str) -> Any:
        return self._run(
            Call(
                "DELETE",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/experiences/{_segment(experience_id, 'experience_id')}",
            )
        )

    def search_experiences(self, agent_id: str, query: str, k: int = 4) -> Any:
        return self._run(
            Call(
                "POST",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/experiences/search",
                {"query": query, "k": k},
                model=SearchResult,
            )
        )

    # -- decisions --------------------------------------------------------------
    def create_decision(
        self,
        agent_id: str,
        decision_time: dt.datetime | str,
        maturity: dt.datetime | str,
        context_text: str,
        *,
        context_features: Mapping[str, float] | None = None,
        reference_weights: Mapping[str, float] | None = None,
        horizon: int = 20,
        drafting: str = "client",
        retrieved_ids: Sequence[str] | None = None,
        retrieved_external_ids: Sequence[str] | None = None,
    ) -> Any:
        """Plan a decision: the plan (:class:`~service.api_types.PlanPublic`) with client drafting, the
        decision (:class:`~service.api_types.DecisionPublic`) with server drafting.

        ``retrieved_ids`` (or ``retrieved_external_ids``) brings your own retrieval: the plan uses exactly
        those experiences, in that order, and the server does not search."""
        body: dict[str, Any] = {
            "decision_time": _time(decision_time),
            "maturity": _time(maturity),
            "context_text": context_text,
            "context_features": dict(context_features or {}),
            "horizon": horizon,
            "drafting": drafting,
        }
        if reference_weights is not None:
            body["reference_weights"] = dict(reference_weights)
        if retrieved_ids is not None:
            body["retrieved_ids"] = list(retrieved_ids)
        if retrieved_external_ids is not None:
            body["retrieved_external_ids"] = list(retrieved_external_ids)
        model = PlanPublic if drafting == "client" else DecisionPublic
        return self._run(
            Call("POST", f"/v1/agents/{_segment(agent_id, 'agent_id')}/decisions", body, model=model, creates=True)
        )

    def submit_drafts(
        self, agent_id: str, decision_id: str, drafts: Sequence[Any], reference: int | None = None
    ) -> Any:
        """One draft per designed subset, in the plan's order (``reference``: scored decisions' reference draft)."""
        body: dict[str, Any] = {"drafts": [dict(d) if isinstance(d, Mapping) else d for d in drafts]}
        if reference is not None:
            body["reference"] = reference
        return self._run(
            Call(
                "POST",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/decisions/{_segment(decision_id, 'decision_id')}/drafts",
                body,
                model=DecisionPublic,
                creates=True,
            )
        )

    def settle(
        self,
        agent_id: str,
        decision_id: str,
        *,
        prices: Mapping[str, Sequence[float]] | None = None,
        returns: Mapping[str, Sequence[float]] | None = None,
        utilities: Sequence[float] | None = None,
        outcome: Any = None,
        rule: str | None = None,
        settled_at: dt.datetime | str | None = None,
    ) -> Any:
        """Settle with prices or returns (portfolio), or utilities, or an outcome and its rule (scored)."""
        body = _outcome_body(prices, returns, utilities, outcome, rule, settled_at)
        return self._run(
            Call(
                "POST",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/decisions/{_segment(decision_id, 'decision_id')}/settle",
                body,
                model=SettlementPublic,
                creates=True,
            )
        )

    def correct(
        self,
        agent_id: str,
        decision_id: str,
        *,
        reason: str,
        prices: Mapping[str, Sequence[float]] | None = None,
        returns: Mapping[str, Sequence[float]] | None = None,
        utilities: Sequence[float] | None = None,
        outcome: Any = None,
        rule: str | None = None,
        settled_at: dt.datetime | str | None = None,
    ) -> Any:
        """Replace a settled decision's wrong outcome (what :meth:`settle` takes, and the reason): the agent
        relearns as if settled right from the start; the log keeps the superseded score."""
        body = {**_outcome_body(prices, returns, utilities, outcome, rule, settled_at), "reason": reason}
        return self._run(
            Call(
                "POST",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/decisions/{_segment(decision_id, 'decision_id')}/corrections",
                body,
                model=SettlementPublic,
                creates=True,
            )
        )

    def get_decision(self, agent_id: str, decision_id: str) -> Any:
        return self._run(
            Call(
                "GET",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/decisions/{_segment(decision_id, 'decision_id')}",
                model=DecisionRecord,
            )
        )

    def list_decisions(
        self,
        agent_id: str,
        *,
        limit: int = 50,
        cursor: str | None = None,
        status: str | None = None,
        maturity_before: dt.datetime | str | None = None,
    ) -> Any:
        """One page of the agent's decisions, oldest first (:class:`~service.api_types.DecisionList`)."""
        params = _params(
            limit=limit,
            cursor=cursor,
            status=status,
            maturity_before=None if maturity_before is None else _time(maturity_before),
        )
        return self._run(
            Call("GET", f"/v1/agents/{_segment(agent_id, 'agent_id')}/decisions", params=params, model=DecisionList)
        )

    # -- trust and values -------------------------------------------------------
    def trust(self, agent_id: str, *, limit: int = 200) -> Any:
        """Gate, state and the ``limit`` most recent scores with the statistic after each."""
        return self._run(
            Call(
                "GET", f"/v1/agents/{_segment(agent_id, 'agent_id')}/trust", params={"limit": limit}, model=TrustPublic
            )
        )

    def trust_log(self, agent_id: str, *, limit: int = 200, cursor: str | None = None) -> Any:
        """One page of the raw hash-chained log (:class:`~service.api_types.LogPage`)."""
        return self._run(
            Call(
                "GET",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/trust/log",
                params=_params(limit=limit, cursor=cursor),
                model=LogPage,
            )
        )

    def verify(self, agent_id: str) -> Any:
        return self._run(Call("GET", f"/v1/agents/{_segment(agent_id, 'agent_id')}/trust/verify", model=VerifyPublic))

    def values(self, agent_id: str) -> Any:
        return self._run(Call("GET", f"/v1/agents/{_segment(agent_id, 'agent_id')}/values", model=ValuesPublic))

    # -- full-Bayes refit -------------------------------------------------------
    def start_refit(self, agent_id: str, method: str = "nuts") -> Any:
        return self._run(
            Call(
                "POST",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/refit",
                {"method": method},
                model=RefitPublic,
                creates=True,
            )
        )

    def get_refit(self, agent_id: str, job_id: str) -> Any:
        return self._run(
            Call(
                "GET",
                f"/v1/agents/{_segment(agent_id, 'agent_id')}/refit/{_segment(job_id, 'job_id')}",
                model=RefitPublic,
            )
        )


class MemtrialClient(Operations):
    """Synchronous client; pass ``http`` to reuse an ``httpx.Client`` (or a test client)."""

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
        self._http.close()

    def __enter__(self) -> MemtrialClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _request(self, method: str, path: str, json: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        """Any request, answered with the decoded JSON body (no model, no retry)."""
        return _decode(
            Call(method, path), self._http.request(method, path, json=json, params=params, headers=self._headers)
        )

    def _run(self, call: Call) -> Any:
        attempts = _Attempts(call, self.retries, self.max_wait, self.in_progress_wait)
        while True:
            try:
                outcome: httpx.Response | httpx.TransportError = self._http.request(
                    call.method,
                    call.path,
                    json=call.body,
                    params=call.params,
                    headers={**self._headers, **attempts.headers},
                )
            except httpx.TransportError as error:
                outcome = error
            if (wait := attempts.wait_after(outcome)) is None:
                return attempts.finish(outcome)
            time.sleep(wait)

    def _pages(self, fetch: Callable[[str | None], Any]) -> Iterator[Any]:
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
        self, agent_id: str, *, active: bool | None = None, page_size: int = 200
    ) -> Iterator[ExperiencePublic]:
        return self._pages(
            lambda cursor: self.list_experiences(agent_id, limit=page_size, active=active, cursor=cursor)
        )

    def iter_decisions(self, agent_id: str, *, status: str | None = None, page_size: int = 200) -> Iterator[Any]:
        return self._pages(lambda cursor: self.list_decisions(agent_id, limit=page_size, cursor=cursor, status=status))

    def iter_log(self, agent_id: str, *, page_size: int = 1000) -> Iterator[Any]:
        """Every log entry in index order (to re-verify the chain outside the service)."""
        return self._pages(lambda cursor: self.trust_log(agent_id, limit=page_size, cursor=cursor))


class AsyncMemtrialClient(Operations):
    """The same operations, awaited: ``await client.create_agent(...)``; ``async for d in client.iter_decisions(...)``."""

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
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemtrialClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def _run(self, call: Call) -> Any:
        attempts = _Attempts(call, self.retries, self.max_wait, self.in_progress_wait)
        while True:
            try:
                outcome: httpx.Response | httpx.TransportError = await self._http.request(
                    call.method,
                    call.path,
                    json=call.body,
                    params=call.params,
                    headers={**self._headers, **attempts.headers},
                )
            except httpx.TransportError as error:
                outcome = error
            if (wait := attempts.wait_after(outcome)) is None:
                return attempts.finish(outcome)
            await asyncio.sleep(wait)

    async def _pages(self, fetch: Callable[[str | None], Any]) -> AsyncIterator[Any]:
        cursor: str | None = None
        while True:
            page = await fetch(cursor)
            for item in page.items:
                yield item
            cursor = page.next_cursor
            if cursor is None:
                return

    def iter_agents(self, *, name: str | None = None, page_size: int = 200) -> AsyncIterator[AgentPublic]:
        return self._pages(lambda cursor: self.list_agents(limit=page_size, cursor=cursor, name=name))

    def iter_experiences(
        self, agent_id: str, *, active: bool | None = None, page_size: int = 200
    ) -> AsyncIterator[ExperiencePublic]:
        return self._pages(
            lambda cursor: self.list_experiences(agent_id, limit=page_size, active=active, cursor=cursor)
        )

    def iter_decisions(self, agent_id: str, *, status: str | None = None, page_size: int = 200) -> AsyncIterator[Any]:
        return self._pages(lambda cursor: self.list_decisions(agent_id, limit=page_size, cursor=cursor, status=status))

    def iter_log(self, agent_id: str, *, page_size: int = 1000) -> AsyncIterator[Any]:
        return self._pages(lambda cursor: self.trust_log(agent_id, limit=page_size, cursor=cursor))
