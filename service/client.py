"""A typed Python client for the memtrial REST service (httpx).

    client = MemtrialClient("http://127.0.0.1:8000", api_key)
    agent = client.create_agent(name="fund", investor="balanced", universe=[...])

Every method returns the decoded JSON body; an error response raises
:class:`ServiceError` carrying the status, code, message and field.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import httpx

__all__ = ["MemtrialClient", "ServiceError"]


class ServiceError(Exception):
    """An error answer of the service: ``{"error": {"code", "message", "field"}}``."""

    def __init__(self, status: int, code: str, message: str, field: str | None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.field = status, code, message, field


def _time(value: dt.datetime | str) -> str:
    return value.isoformat() if isinstance(value, dt.datetime) else value


def _params(**values: Any) -> dict[str, Any]:
    """Query parameters without the unset ones."""
    return {name: value for name, value in values.items() if value is not None}


class MemtrialClient:
    """Synchronous client; pass ``http`` to reuse an ``httpx.Client`` (or a test client)."""

    def __init__(self, base_url: str = "", api_key: str | None = None, *, http: httpx.Client | None = None, timeout: float = 120.0) -> None:
        self._http = http if http is not None else httpx.Client(base_url=base_url, timeout=timeout)
        self._headers = {} if api_key is None else {"Authorization": f"Bearer {api_key}"}

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemtrialClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _request(self, method: str, path: str, json: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        response = self._http.request(method, path, json=json, params=params, headers=self._headers)
        if response.status_code >= 400:
            try:
                error = response.json()["error"]
            except (ValueError, KeyError, TypeError):
                raise ServiceError(response.status_code, "http_error", response.text[:500], None) from None
            raise ServiceError(response.status_code, error["code"], error["message"], error.get("field"))
        if response.status_code == 204 or not response.content:
            return None
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    # -- operations ------------------------------------------------------------
    def health(self) -> dict[str, str]:
        return self._request("GET", "/healthz")  # type: ignore[no-any-return]

    def ready(self) -> dict[str, str]:
        return self._request("GET", "/readyz")  # type: ignore[no-any-return]

    def metrics(self) -> str:
        return self._request("GET", "/metrics")  # type: ignore[no-any-return]

    # -- agents ----------------------------------------------------------------
    def create_agent(
        self,
        name: str,
        investor: str,
        universe: Sequence[Mapping[str, str]],
        *,
        design: str = "half",
        gate: Mapping[str, Any] | None = None,
        learner: str = "auto",
        fallback: str = "ftrl",
        fee_bp: float = 15.0,
        drafter: Mapping[str, Any] | None = None,
        action: str = "gate",
        credit: str = "centred",
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "name": name,
            "investor": investor,
            "universe": list(universe),
            "design": design,
            "learner": learner,
            "fallback": fallback,
            "fee_bp": fee_bp,
            "action": action,
            "credit": credit,
        }
        if gate is not None:
            body["gate"] = dict(gate)
        if drafter is not None:
            body["drafter"] = dict(drafter)
        return self._request("POST", "/v1/agents", body)  # type: ignore[no-any-return]

    def get_agent(self, agent_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/agents/{agent_id}")  # type: ignore[no-any-return]

    def list_agents(self, *, limit: int = 50, cursor: str | None = None, name: str | None = None) -> dict[str, Any]:
        """One page of the tenant's agents: ``{"items", "next_cursor", "limit"}``."""
        params = _params(limit=limit, cursor=cursor, name=name)
        return self._request("GET", "/v1/agents", params=params)  # type: ignore[no-any-return]

    def iter_agents(self, *, name: str | None = None, page_size: int = 200) -> Iterator[dict[str, Any]]:
        """Every agent of the tenant, following the cursors."""
        return self._pages(lambda cursor: self.list_agents(limit=page_size, cursor=cursor, name=name))

    def delete_agent(self, agent_id: str) -> None:
        """Delete the agent and everything it owns (irreversible)."""
        self._request("DELETE", f"/v1/agents/{agent_id}")

    def _pages(self, fetch: Callable[[str | None], dict[str, Any]]) -> Iterator[dict[str, Any]]:
        cursor: str | None = None
        while True:
            page = fetch(cursor)
            yield from page["items"]
            cursor = page.get("next_cursor")
            if cursor is None:
                return

    # -- experiences -----------------------------------------------------------
    def add_experience(self, agent_id: str, text: str, metadata: Mapping[str, Any] | None = None, structured: Mapping[str, Any] | None = None) -> dict[str, Any]:
        body = {"text": text, "metadata": dict(metadata or {}), "structured": None if structured is None else dict(structured)}
        return self._request("POST", f"/v1/agents/{agent_id}/experiences", body)  # type: ignore[no-any-return]

    def add_experiences(self, agent_id: str, experiences: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return self._request("POST", f"/v1/agents/{agent_id}/experiences", {"experiences": list(experiences)})  # type: ignore[no-any-return]

    def list_experiences(
        self, agent_id: str, *, limit: int = 50, offset: int = 0, active: bool | None = None, cursor: str | None = None
    ) -> dict[str, Any]:
        params = _params(limit=limit, offset=offset or None, cursor=cursor, active=None if active is None else str(active).lower())
        return self._request("GET", f"/v1/agents/{agent_id}/experiences", params=params)  # type: ignore[no-any-return]

    def iter_experiences(self, agent_id: str, *, active: bool | None = None, page_size: int = 200) -> Iterator[dict[str, Any]]:
        """Every experience of the agent, following the cursors."""
        return self._pages(lambda cursor: self.list_experiences(agent_id, limit=page_size, active=active, cursor=cursor))

    def get_experience(self, agent_id: str, experience_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/agents/{agent_id}/experiences/{experience_id}")  # type: ignore[no-any-return]

    def update_experience(self, agent_id: str, experience_id: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
        return self._request("PATCH", f"/v1/agents/{agent_id}/experiences/{experience_id}", {"metadata": dict(metadata)})  # type: ignore[no-any-return]

    def retire_experience(self, agent_id: str, experience_id: str) -> dict[str, Any]:
        return self._request("POST", f"/v1/agents/{agent_id}/experiences/{experience_id}/retire")  # type: ignore[no-any-return]

    def delete_experience(self, agent_id: str, experience_id: str) -> None:
        self._request("DELETE", f"/v1/agents/{agent_id}/experiences/{experience_id}")

    def search_experiences(self, agent_id: str, query: str, k: int = 4) -> dict[str, Any]:
        return self._request("POST", f"/v1/agents/{agent_id}/experiences/search", {"query": query, "k": k})  # type: ignore[no-any-return]

    # -- decisions -------------------------------------------------------------
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
    ) -> dict[str, Any]:
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
        return self._request("POST", f"/v1/agents/{agent_id}/decisions", body)  # type: ignore[no-any-return]

    def submit_drafts(self, agent_id: str, decision_id: str, drafts: Sequence[Mapping[str, float]]) -> dict[str, Any]:
        body = {"drafts": [dict(d) for d in drafts]}
        return self._request("POST", f"/v1/agents/{agent_id}/decisions/{decision_id}/drafts", body)  # type: ignore[no-any-return]

    def settle(
        self,
        agent_id: str,
        decision_id: str,
        *,
        prices: Mapping[str, Sequence[float]] | None = None,
        returns: Mapping[str, Sequence[float]] | None = None,
        settled_at: dt.datetime | str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if prices is not None:
            body["prices"] = {asset: list(values) for asset, values in prices.items()}
        if returns is not None:
            body["returns"] = {asset: list(values) for asset, values in returns.items()}
        if settled_at is not None:
            body["settled_at"] = _time(settled_at)
        return self._request("POST", f"/v1/agents/{agent_id}/decisions/{decision_id}/settle", body)  # type: ignore[no-any-return]

    def get_decision(self, agent_id: str, decision_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/agents/{agent_id}/decisions/{decision_id}")  # type: ignore[no-any-return]

    def list_decisions(
        self,
        agent_id: str,
        *,
        limit: int = 50,
        cursor: str | None = None,
        status: str | None = None,
        maturity_before: dt.datetime | str | None = None,
    ) -> dict[str, Any]:
        """One page of the agent's decisions, oldest first: ``{"items", "next_cursor", "limit"}``."""
        params = _params(limit=limit, cursor=cursor, status=status, maturity_before=None if maturity_before is None else _time(maturity_before))
        return self._request("GET", f"/v1/agents/{agent_id}/decisions", params=params)  # type: ignore[no-any-return]

    def iter_decisions(self, agent_id: str, *, status: str | None = None, page_size: int = 200) -> Iterator[dict[str, Any]]:
        """Every decision of the agent, following the cursors."""
        return self._pages(lambda cursor: self.list_decisions(agent_id, limit=page_size, cursor=cursor, status=status))

    # -- trust and values ------------------------------------------------------
    def trust(self, agent_id: str, *, limit: int = 200) -> dict[str, Any]:
        """Gate, state and the ``limit`` most recent scores with the statistic after each."""
        return self._request("GET", f"/v1/agents/{agent_id}/trust", params={"limit": limit})  # type: ignore[no-any-return]

    def trust_log(self, agent_id: str, *, limit: int = 200, cursor: str | None = None) -> dict[str, Any]:
        """One page of the raw hash-chained log: ``{"gate_hash", "n_entries", "items", "next_cursor", "limit"}``."""
        return self._request("GET", f"/v1/agents/{agent_id}/trust/log", params=_params(limit=limit, cursor=cursor))  # type: ignore[no-any-return]

    def iter_log(self, agent_id: str, *, page_size: int = 1000) -> Iterator[dict[str, Any]]:
        """Every log entry in index order (to re-verify the chain outside the service)."""
        return self._pages(lambda cursor: self.trust_log(agent_id, limit=page_size, cursor=cursor))

    def verify(self, agent_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/agents/{agent_id}/trust/verify")  # type: ignore[no-any-return]

    def values(self, agent_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/agents/{agent_id}/values")  # type: ignore[no-any-return]

    # -- full-Bayes refit --------------------------------------------------------
    def start_refit(self, agent_id: str, method: str = "nuts") -> dict[str, Any]:
        return self._request("POST", f"/v1/agents/{agent_id}/refit", {"method": method})  # type: ignore[no-any-return]

    def get_refit(self, agent_id: str, job_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/agents/{agent_id}/refit/{job_id}")  # type: ignore[no-any-return]
