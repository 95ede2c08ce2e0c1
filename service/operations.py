"""The service's operations, declared once: a table of rows (HTTP method, path template, and what each
operation sends and answers) that both clients of :mod:`service.client` bind.

A row's ``send`` function has the operation's public signature and returns a :class:`Sent`: the JSON
body, the query parameters and the type of the answer. Read on a :class:`Blocking` client (the sync
one) the row is a method answering that type; on an :class:`Awaiting` client (the async one), a method
answering an awaitable of it. Path ids are checked to be single ids before anything is sent.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import json
import math
import re
import string
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, ParamSpec, TypeVar, overload
from urllib.parse import quote

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
    RankResult,
    RefitPublic,
    SearchResult,
    SettlementPublic,
    TrustPublic,
    ValuesPublic,
    VerifyPublic,
)

__all__ = ["Awaiting", "Blocking", "Call", "Operation", "Operations", "Sent"]

P = ParamSpec("P")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


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
        body["utilities"] = list(utilities)  # as given: the service refuses what is not a number, naming it
    if outcome is not None:
        body["outcome"] = outcome
    if rule is not None:
        body["rule"] = rule
    if settled_at is not None:
        body["settled_at"] = _time(settled_at)
    return body


def _plain(value: Any) -> Any:
    """What JSON's encoder does not know, as the Python values it holds (NumPy's numbers and arrays)."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(type(value).__name__)


def _fault(value: Any, where: str) -> str | None:
    """Where in ``value`` lies what JSON cannot carry, in words (None where nothing does)."""
    here = where or "body"
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{here} must be a finite number (JSON has no {float(value)!r})"
    if isinstance(value, Mapping):
        keyless = next((key for key in value if key is not None and not isinstance(key, (str, int, float))), None)
        if keyless is not None:
            return f"{here}: a key of type {type(keyless).__name__} ({keyless!r}) has no JSON form (send texts)"
        items: Any = ((f"{where}.{key}" if where else str(key), item) for key, item in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{where}.{index}" if where else str(index), item) for index, item in enumerate(value))
    elif callable(getattr(value, "tolist", None)):
        return _fault(value.tolist(), where)
    else:
        return f"{here}: a {type(value).__name__} has no JSON form (send numbers, texts, lists and mappings)"
    return next((fault for place, item in items if (fault := _fault(item, place)) is not None), None)


def json_content(body: Any) -> bytes | None:
    """A request body as JSON (None: no body). NumPy numbers and arrays go as the numbers they hold; a number
    JSON cannot carry (NaN, infinity) or an object it has no form for raises ValueError naming where it lies,
    before anything is sent (the service would refuse it, naming the same field)."""
    if body is None:
        return None
    try:
        text = json.dumps(body, allow_nan=False, ensure_ascii=False, separators=(",", ":"), default=_plain)
    except (ValueError, TypeError) as error:
        fault = _fault(body, "")
        if fault is None:
            raise
        raise ValueError(fault) from error
    return text.encode("utf-8")


class _Keep(Enum):
    """A setting left as it is (``None`` is a value: it sets the setting aside)."""

    KEEP = "keep"


_KEEP = _Keep.KEEP


def _params(**values: Any) -> dict[str, Any]:
    """Query parameters without the unset ones (NumPy's numbers as the numbers they hold)."""
    return {
        name: value.tolist() if callable(getattr(value, "tolist", None)) else value
        for name, value in values.items()
        if value is not None
    }


@dataclass(frozen=True, slots=True)
class Call:
    """One request: what to send, what model the answer is, whether it creates (and so carries a key), whether
    it only reads (a POST that writes nothing, as a search or a rank: resent as a GET is)."""

    method: str
    path: str
    body: Any = None
    params: Mapping[str, Any] | None = None
    model: Any = None  # a Pydantic model, or None for the decoded body as it is
    creates: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    reads: bool = False


@dataclass(frozen=True, slots=True)
class Sent(Generic[T_co]):
    """What an operation sends besides its path (a JSON body, query parameters) and the type of its answer."""

    answer: type[T_co]
    body: Any = None
    params: Mapping[str, Any] | None = None


class Operation(Generic[P, T]):
    """One row of the table of operations: the HTTP method, the path template, and ``send``, which takes the
    operation's arguments (its public signature) and says what to send and what answers.

    On a :class:`Blocking` client it reads as a method answering ``T``; on an :class:`Awaiting` one, as
    one answering an awaitable of ``T``. The path's ``{fields}`` are the arguments of the same name, each
    checked to be one id (:func:`_segment`) before anything is sent.
    """

    def __init__(
        self, method: str, path: str, send: Callable[P, Sent[T]], *, creates: bool = False, reads: bool = False
    ) -> None:
        self.method, self.path, self.send, self.creates, self.reads = method, path, send, creates, reads
        self.fields = tuple(name for _, name, _, _ in string.Formatter().parse(path) if name)
        self.signature = inspect.signature(send)
        self.name = send.__name__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    def call(self, *args: P.args, **kwargs: P.kwargs) -> Call:
        """The request for these arguments."""
        arguments = self.signature.bind(*args, **kwargs)
        arguments.apply_defaults()
        path = self.path.format(**{name: _segment(arguments.arguments[name], name) for name in self.fields})
        key = arguments.arguments.get("idempotency_key") if self.creates else None
        headers = {} if key is None else {"Idempotency-Key": _idempotency_key(key)}
        sent = self.send(*args, **kwargs)
        model = None if sent.answer in _RAW else sent.answer
        return Call(
            self.method,
            path,
            sent.body,
            sent.params,
            model=model,
            creates=self.creates,
            headers=headers,
            reads=self.reads,
        )

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Operation[P, T]: ...
    @overload
    def __get__(self, client: Awaiting, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...
    @overload
    def __get__(self, client: Blocking, owner: type[Any]) -> Callable[P, T]: ...
    def __get__(self, client: Any, owner: type[Any]) -> Any:
        if client is None:
            return self

        @functools.wraps(self.send)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return client._run(self.call(*args, **kwargs))

        bound.__name__ = bound.__qualname__ = self.name
        return bound


def _idempotency_key(key: object) -> str:
    """A creating call's own key, as the service holds keys (1 to 200 letters, digits or ``_ . : -``), or a
    ValueError before anything is sent."""
    if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z0-9_.:\-]{1,200}", key):
        raise ValueError(f"idempotency_key must be 1 to 200 letters, digits or _ . : -, got {key!r}")
    return key


#: answers decoded as they come (no model): a JSON body as it is, text, or nothing
_RAW: tuple[type[Any], ...] = (type(None), str)


# -- what each operation sends ---------------------------------------------------
def _health() -> Sent[dict[str, str]]:
    return Sent(dict[str, str])


def _ready() -> Sent[dict[str, str]]:
    return Sent(dict[str, str])


def _metrics() -> Sent[str]:
    return Sent(str)


def _providers() -> Sent[ProvidersPublic]:
    """The LLM providers and models this server allows for server drafting."""
    return Sent(ProvidersPublic)


def _create_agent(
    name: str,
    investor: str | None = None,
    universe: Sequence[Mapping[str, str]] | None = None,
    *,
    kind: str = "portfolio",
    outcomes: Sequence[str] | None = None,
    design: str | None = None,
    k: int | None = None,
    gate: Mapping[str, Any] | None = None,
    learner: str | None = None,
    fallback: str | None = None,
    fee_bp: float | None = None,
    drafter: Mapping[str, Any] | None = None,
    action: str | None = None,
    credit: str | None = None,
    robust: bool | None = None,
    draft_budget: float | None = None,
    reference: str | None = None,
    answer: Mapping[str, Any] | None = None,
    draft_horizon: int | None = None,
    retrieval: str | None = None,
    quarantine: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
) -> Sent[AgentPublic]:
    """A portfolio agent (investor and universe) or, with ``kind="scored"``, a scored one (``outcomes``
    names the outcomes of probability forecasts). Answers :class:`~service.api_types.AgentPublic`.
    A setting left at None is the server's default for a new agent (``POST /v1/agents``).
    ``draft_budget``: LLM draft calls per decision on average (each plan lists the drafts to make);
    ``draft_horizon``: the number of decisions it covers (trials then come first).
    ``answer``: a scored agent's drafts for server drafting (``{"type": "number", "minimum": 0}``, ...).
    ``retrieval``: ``similarity`` or ``value_aware``; ``quarantine``: ``{"enabled": True, "level": 0.05}``."""
    body: dict[str, Any] = {"name": name, "kind": kind}
    optional = {
        "design": design,
        "k": k,
        "learner": learner,
        "fallback": fallback,
        "fee_bp": fee_bp,
        "action": action,
        "credit": credit,
        "robust": robust,
        "reference": reference,
        "draft_budget": draft_budget,
        "draft_horizon": draft_horizon,
        "investor": investor,
        "universe": None if universe is None else list(universe),
        "outcomes": None if outcomes is None else list(outcomes),
        "retrieval": retrieval,
        "quarantine": None if quarantine is None else dict(quarantine),
    }
    body.update({key: value for key, value in optional.items() if value is not None})
    if gate is not None:
        body["gate"] = dict(gate)
    if drafter is not None:
        body["drafter"] = dict(drafter)
    if answer is not None:
        body["answer"] = dict(answer)
    return Sent(AgentPublic, body)


def _get_agent(agent_id: str) -> Sent[AgentPublic]:
    return Sent(AgentPublic)


def _update_agent(
    agent_id: str,
    *,
    name: str | None = None,
    drafter: Mapping[str, Any] | None = None,
    remove_drafter: bool = False,
    draft_budget: float | None | _Keep = _KEEP,
    draft_horizon: int | None | _Keep = _KEEP,
    retrieval: str | None = None,
    quarantine: Mapping[str, Any] | None = None,
) -> Sent[AgentPublic]:
    """Rename the agent, change its drafter or its draft budget and horizon (from the next plan on;
    ``None`` sets the budget or horizon aside; left out, each stays as it is), its ``retrieval``
    (``similarity`` or ``value_aware``) or its ``quarantine`` (the fields given change, the others stay)."""
    body: dict[str, Any] = _params(
        name=name,
        drafter=None if drafter is None else dict(drafter),
        retrieval=retrieval,
        quarantine=None if quarantine is None else dict(quarantine),
    )
    if remove_drafter:
        body["remove_drafter"] = True
    if not isinstance(draft_budget, _Keep):
        body["draft_budget"] = draft_budget
    if not isinstance(draft_horizon, _Keep):
        body["draft_horizon"] = draft_horizon
    return Sent(AgentPublic, body)


def _list_agents(*, limit: int = 50, cursor: str | None = None, name: str | None = None) -> Sent[AgentList]:
    """One page of the tenant's agents (:class:`~service.api_types.AgentList`)."""
    return Sent(AgentList, params=_params(limit=limit, cursor=cursor, name=name))


def _delete_agent(agent_id: str) -> Sent[None]:
    """Delete the agent and everything it owns (irreversible)."""
    return Sent(type(None))


def _add_experience(
    agent_id: str,
    text: str,
    metadata: Mapping[str, Any] | None = None,
    structured: Mapping[str, Any] | None = None,
    external_id: str | None = None,
    *,
    idempotency_key: str | None = None,
) -> Sent[ExperiencePublic]:
    """Add one experience; with an ``external_id`` the agent already holds, update that one instead
    (the answer's ``write`` says created, updated or unchanged)."""
    body = {
        "text": text,
        "metadata": dict(metadata or {}),
        "structured": None if structured is None else dict(structured),
    }
    if external_id is not None:
        body["external_id"] = external_id
    return Sent(ExperiencePublic, body)


def _add_experiences(
    agent_id: str, experiences: Sequence[Mapping[str, Any] | str], *, idempotency_key: str | None = None
) -> Sent[ExperienceList]:
    """A batch (texts, or objects with ``text`` and optional ``metadata``/``structured``/``external_id``)."""
    items = [{"text": item} if isinstance(item, str) else dict(item) for item in experiences]
    return Sent(ExperienceList, {"experiences": items})


def _list_experiences(
    agent_id: str,
    *,
    limit: int = 50,
    offset: int = 0,
    active: bool | None = None,
    cursor: str | None = None,
    external_id: str | None = None,
    status: str | None = None,
) -> Sent[ExperienceList]:
    """One page of the agent's experiences (``status``: only ``active``, ``quarantined`` or ``retired`` ones)."""
    params = _params(
        limit=limit,
        offset=offset or None,
        cursor=cursor,
        active=None if active is None else str(active).lower(),
        external_id=external_id,
        status=status,
    )
    return Sent(ExperienceList, params=params)


def _get_experience(agent_id: str, experience_id: str) -> Sent[ExperienceDetail]:
    return Sent(ExperienceDetail)


def _update_experience(agent_id: str, experience_id: str, metadata: Mapping[str, Any]) -> Sent[ExperiencePublic]:
    return Sent(ExperiencePublic, {"metadata": dict(metadata)})


def _retire_experience(agent_id: str, experience_id: str) -> Sent[ExperiencePublic]:
    return Sent(ExperiencePublic)


def _delete_experience(agent_id: str, experience_id: str) -> Sent[None]:
    return Sent(type(None))


def _candidates(
    candidate_ids: Sequence[str] | None,
    candidate_external_ids: Sequence[str] | None,
    similarities: Sequence[float] | None,
) -> dict[str, Any]:
    """The bring-your-own candidates of a rank or a plan, as the body carries them (those given)."""
    given = {
        "candidate_ids": None if candidate_ids is None else list(candidate_ids),
        "candidate_external_ids": None if candidate_external_ids is None else list(candidate_external_ids),
        "similarities": None if similarities is None else [float(s) for s in similarities],
    }
    return {key: value for key, value in given.items() if value is not None}


def _rank_experiences(
    agent_id: str,
    *,
    k: int,
    candidate_ids: Sequence[str] | None = None,
    candidate_external_ids: Sequence[str] | None = None,
    similarities: Sequence[float] | None = None,
) -> Sent[RankResult]:
    """The k of your candidates (by id or by external id) to use, best first, by the agent's retrieval;
    ``similarities``: one per candidate, higher is closer (without them the given order is the similarity
    order). Quarantined candidates are never picked (:class:`~service.api_types.RankResult`)."""
    body: dict[str, Any] = {"k": k}
    body.update(_candidates(candidate_ids, candidate_external_ids, similarities))
    return Sent(RankResult, body)


def _release_experience(
    agent_id: str, experience_id: str, *, reason: str, idempotency_key: str | None = None
) -> Sent[ExperiencePublic]:
    """Release a quarantined experience (a ``release`` log entry keeps the evidence and the reason)."""
    return Sent(ExperiencePublic, {"reason": reason})


def _search_experiences(agent_id: str, query: str, k: int = 4) -> Sent[SearchResult]:
    return Sent(SearchResult, {"query": query, "k": k})


def _create_decision(
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
    candidate_ids: Sequence[str] | None = None,
    candidate_external_ids: Sequence[str] | None = None,
    similarities: Sequence[float] | None = None,
    idempotency_key: str | None = None,
) -> Sent[PlanPublic | DecisionPublic]:
    """Plan a decision: the plan (:class:`~service.api_types.PlanPublic`) with client drafting, the
    decision (:class:`~service.api_types.DecisionPublic`) with server drafting.

    ``retrieved_ids`` (or ``retrieved_external_ids``) brings your own retrieval: the plan uses exactly
    those experiences, in that order, and the server does not search. ``candidate_ids`` (or
    ``candidate_external_ids``, with optional ``similarities``) brings your own candidates: the engine
    picks k of them by the agent's retrieval."""
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
    body.update(_candidates(candidate_ids, candidate_external_ids, similarities))
    answer: type[PlanPublic | DecisionPublic] = PlanPublic if drafting == "client" else DecisionPublic
    return Sent(answer, body)


def _submit_drafts(
    agent_id: str,
    decision_id: str,
    drafts: Sequence[Any],
    reference: int | None = None,
    *,
    idempotency_key: str | None = None,
) -> Sent[DecisionPublic]:
    """One draft per designed subset, in the plan's order (``reference``: scored decisions' reference draft)."""
    body: dict[str, Any] = {"drafts": [dict(d) if isinstance(d, Mapping) else d for d in drafts]}
    if reference is not None:
        body["reference"] = reference
    return Sent(DecisionPublic, body)


def _settle(
    agent_id: str,
    decision_id: str,
    *,
    prices: Mapping[str, Sequence[float]] | None = None,
    returns: Mapping[str, Sequence[float]] | None = None,
    utilities: Sequence[float] | None = None,
    outcome: Any = None,
    rule: str | None = None,
    settled_at: dt.datetime | str | None = None,
    idempotency_key: str | None = None,
) -> Sent[SettlementPublic]:
    """Settle with prices or returns (portfolio), or utilities, or an outcome and its rule (scored)."""
    return Sent(SettlementPublic, _outcome_body(prices, returns, utilities, outcome, rule, settled_at))


def _correct(
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
    idempotency_key: str | None = None,
) -> Sent[SettlementPublic]:
    """Replace a settled decision's wrong outcome (what :meth:`settle` takes, and the reason): the agent
    relearns as if settled right from the start; the log keeps the superseded score."""
    body = {**_outcome_body(prices, returns, utilities, outcome, rule, settled_at), "reason": reason}
    return Sent(SettlementPublic, body)


def _get_decision(agent_id: str, decision_id: str) -> Sent[DecisionRecord]:
    return Sent(DecisionRecord)


def _list_decisions(
    agent_id: str,
    *,
    limit: int = 50,
    cursor: str | None = None,
    status: str | None = None,
    maturity_before: dt.datetime | str | None = None,
) -> Sent[DecisionList]:
    """One page of the agent's decisions, oldest first (:class:`~service.api_types.DecisionList`)."""
    params = _params(
        limit=limit,
        cursor=cursor,
        status=status,
        maturity_before=None if maturity_before is None else _time(maturity_before),
    )
    return Sent(DecisionList, params=params)


def _trust(agent_id: str, *, limit: int = 200) -> Sent[TrustPublic]:
    """Gate, state and the ``limit`` most recent scores with the statistic after each."""
    return Sent(TrustPublic, params={"limit": limit})


def _trust_log(agent_id: str, *, limit: int = 200, cursor: str | None = None) -> Sent[LogPage]:
    """One page of the raw hash-chained log (:class:`~service.api_types.LogPage`)."""
    return Sent(LogPage, params=_params(limit=limit, cursor=cursor))


def _verify(agent_id: str) -> Sent[VerifyPublic]:
    return Sent(VerifyPublic)


def _values(agent_id: str) -> Sent[ValuesPublic]:
    return Sent(ValuesPublic)


def _start_refit(agent_id: str, method: str = "nuts", *, idempotency_key: str | None = None) -> Sent[RefitPublic]:
    return Sent(RefitPublic, {"method": method})


def _get_refit(agent_id: str, job_id: str) -> Sent[RefitPublic]:
    return Sent(RefitPublic)


_AGENT = "/v1/agents/{agent_id}"
_EXPERIENCE = _AGENT + "/experiences/{experience_id}"
_DECISION = _AGENT + "/decisions/{decision_id}"


class Operations:
    """Every operation of the API, once: the table both clients bind (a client supplies ``_run``)."""

    # -- service --------------------------------------------------------------------------------------
    health = Operation("GET", "/healthz", _health)
    ready = Operation("GET", "/readyz", _ready)
    metrics = Operation("GET", "/metrics", _metrics)
    providers = Operation("GET", "/v1/llm/providers", _providers)
    # -- agents ---------------------------------------------------------------------------------------
    create_agent = Operation("POST", "/v1/agents", _create_agent, creates=True)
    get_agent = Operation("GET", _AGENT, _get_agent)
    update_agent = Operation("PATCH", _AGENT, _update_agent)
    list_agents = Operation("GET", "/v1/agents", _list_agents)
    delete_agent = Operation("DELETE", _AGENT, _delete_agent)
    # -- experiences ----------------------------------------------------------------------------------
    add_experience = Operation("POST", _AGENT + "/experiences", _add_experience, creates=True)
    add_experiences = Operation("POST", _AGENT + "/experiences", _add_experiences, creates=True)
    list_experiences = Operation("GET", _AGENT + "/experiences", _list_experiences)
    get_experience = Operation("GET", _EXPERIENCE, _get_experience)
    update_experience = Operation("PATCH", _EXPERIENCE, _update_experience)
    retire_experience = Operation("POST", _EXPERIENCE + "/retire", _retire_experience)
    delete_experience = Operation("DELETE", _EXPERIENCE, _delete_experience)
    search_experiences = Operation("POST", _AGENT + "/experiences/search", _search_experiences, reads=True)
    rank_experiences = Operation("POST", _AGENT + "/experiences/rank", _rank_experiences, reads=True)
    release_experience = Operation("POST", _EXPERIENCE + "/release", _release_experience, creates=True)
    # -- decisions ------------------------------------------------------------------------------------
    create_decision = Operation("POST", _AGENT + "/decisions", _create_decision, creates=True)
    submit_drafts = Operation("POST", _DECISION + "/drafts", _submit_drafts, creates=True)
    settle = Operation("POST", _DECISION + "/settle", _settle, creates=True)
    correct = Operation("POST", _DECISION + "/corrections", _correct, creates=True)
    get_decision = Operation("GET", _DECISION, _get_decision)
    list_decisions = Operation("GET", _AGENT + "/decisions", _list_decisions)
    # -- trust and values -----------------------------------------------------------------------------
    trust = Operation("GET", _AGENT + "/trust", _trust)
    trust_log = Operation("GET", _AGENT + "/trust/log", _trust_log)
    verify = Operation("GET", _AGENT + "/trust/verify", _verify)
    values = Operation("GET", _AGENT + "/values", _values)
    # -- full-Bayes refit -----------------------------------------------------------------------------
    start_refit = Operation("POST", _AGENT + "/refit", _start_refit, creates=True)
    get_refit = Operation("GET", _AGENT + "/refit/{job_id}", _get_refit)


class Blocking(Operations):
    """The operations of a client whose ``_run`` sends a call and returns its answer."""

    def _run(self, call: Call) -> Any:
        raise NotImplementedError


class Awaiting(Operations):
    """The operations of a client whose ``_run`` is a coroutine function: each answers an awaitable."""

    async def _run(self, call: Call) -> Any:
        raise NotImplementedError
