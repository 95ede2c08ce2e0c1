"""LangGraph: the memtrial decision loop as a graph, one model call per designed subset.

:func:`decision_graph` compiles ``plan -> draft (one branch per designed subset, in parallel) -> decide``:

- ``plan`` asks the service for a plan (its own retrieval, or the ids a ``retrieve`` function of yours
  picks from your store: bring your own retrieval);
- ``draft`` runs once per subset listed in the plan, each branch calling your ``draft`` function with
  exactly that subset's lessons (one model call each: a single call writing every draft would see every
  lesson and defeat the design); a draft-budget plan lists fewer subsets and so makes fewer calls;
- ``decide`` posts the drafts in the plan's order and puts the decision in the state.

The state (:class:`DecisionState`) holds ``decision_time``, ``maturity`` and ``context_text`` in, and
``plan`` and ``decision`` (answers as JSON dicts; utilities and values in utility per decision) out. :func:`settle_node` is the node that settles a
decision once its outcome is known (state ``decision_id`` and ``outcome``: the settle body's fields).

:func:`rank_node` is the node that lets memtrial choose among the memories your own store found
(method 4.12): it reads the state's ``candidates`` (ids, or external ids) and optional ``similarities``
(your store's scores, higher is closer), asks ``POST .../experiences/rank`` for the k best, and puts
memtrial's picks in the state (``ranked``: best first, each with why it was picked and its value;
quarantined memories are never picked, method 4.13). With ``rank_k``, :func:`decision_graph` runs it
between your ``retrieve`` and the plan: ``retrieve -> rank -> plan -> draft -> decide``.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from memtrial.errors import import_extra
from service.client import MemtrialClient, ServiceError

__all__ = [
    "DecisionState",
    "DraftTask",
    "RankState",
    "SettleState",
    "decision_graph",
    "merge_drafts",
    "rank_node",
    "settle_node",
]


@dataclass(frozen=True)
class DraftTask:
    """One draft to write: the decision's context and exactly one designed subset's lessons."""

    index: int
    context_text: str
    lessons: tuple[str, ...]
    experience_ids: tuple[str, ...]
    external_ids: tuple[str | None, ...]


def merge_drafts(current: list[tuple[int, Any]] | None, update: list[tuple[int, Any]] | None) -> list[tuple[int, Any]]:
    """The drafts of the decision in hand, merged from the parallel branches; a new plan (``None``) starts them
    afresh. Added up alone, a thread kept by a checkpointer held every decision's drafts, growing by one
    decision's each run."""
    if update is None:
        return []
    return [*(current or []), *update]


class DecisionState(TypedDict, total=False):
    decision_time: str
    maturity: str
    context_text: str
    options: dict[str, Any]  # more create_decision keywords (horizon, reference_weights, ...)
    plan: dict[str, Any]
    drafts: Annotated[list[tuple[int, Any]], merge_drafts]  # (subset index, draft), this decision's, from the branches
    decision: dict[str, Any] | None  # None from a new plan until its decision is made
    candidates: list[str]  # with rank_k: what retrieve found, best first
    similarities: list[float] | None  # with rank_k: its scores, one per candidate (None: the given order)
    ranked: list[dict[str, Any]]  # with rank_k: memtrial's picks, the plan's experiences


class RankState(TypedDict, total=False):
    candidates: list[str]  # ids (or, by external id, your store's ids) of candidate memories, best first
    similarities: list[float] | None  # optional: one score per candidate, higher is closer
    ranked: list[dict[str, Any]]  # memtrial's picks, best first: the rank answer's items as JSON dicts


class SettleState(TypedDict, total=False):
    decision_id: str
    outcome: dict[str, Any]  # the settle body: returns or prices, utilities, or outcome and rule
    settlement: dict[str, Any]


def decision_graph(
    client: MemtrialClient,
    agent_id: str,
    draft: Callable[[DraftTask], Any],
    *,
    retrieve: Callable[[str], Sequence[str] | Sequence[tuple[str, float]]] | None = None,
    by_external_id: bool = False,
    rank_k: int | None = None,
    checkpointer: Any = None,
) -> Any:
    """The compiled graph of one decision (invoke it with a :class:`DecisionState`).

    draft: your model call for one :class:`DraftTask`, returning the draft (weights by asset, a
    forecast, a number or an answer). retrieve: optional; from the context, the ids (or, with
    ``by_external_id``, the external ids) of the experiences to plan on, best first. rank_k: optional;
    ``retrieve`` then names candidates (ids, or (id, similarity) pairs) and memtrial picks the
    ``rank_k`` to plan on (:func:`rank_node`); the state keeps ``candidates``, ``similarities`` and
    ``ranked``. With ``retrieve``, the plan never falls back on the service's own search: with no pick (no
    candidate, or all quarantined) it drafts without memory alone (an empty retrieval). Without ``rank_k``
    the plan uses exactly what ``retrieve`` returns (ids, or the ids of (id, similarity) pairs), less any
    the agent has quarantined since (a plan may not name one, method 4.13). checkpointer: optional; LangGraph's
    (``InMemorySaver``, a database saver), to run decisions on a thread whose state it keeps: each run's
    state then holds that decision's drafts only (a graph used as a subgraph inherits its parent's).
    """
    graph_module = import_extra("langgraph.graph", "langgraph", "the LangGraph decision graph")
    types = import_extra("langgraph.types", "langgraph", "the LangGraph decision graph")
    if rank_k is not None and retrieve is None:
        raise ValueError("rank_k: memtrial ranks the candidates retrieve finds; give retrieve too")

    plan = _plan_node(client, agent_id, retrieve, by_external_id, rank_k)

    fan_out = _fan_out(types)
    write = _draft_node(draft)

    def decide(state: DecisionState) -> dict[str, Any]:
        by_index = dict(state["drafts"])
        order = [subset["index"] for subset in state["plan"]["subsets"]]
        decided = client.submit_drafts(agent_id, state["plan"]["decision_id"], [by_index[i] for i in order])
        return {"decision": decided.model_dump(mode="json")}

    builder = graph_module.StateGraph(DecisionState)
    builder.add_node("plan", plan)
    builder.add_node("draft", write)
    builder.add_node("decide", decide)
    if rank_k is None:
        builder.add_edge(graph_module.START, "plan")
    else:
        assert retrieve is not None
        builder.add_node("retrieve", _retrieve_node(retrieve))
        builder.add_node("rank", rank_node(client, agent_id, k=rank_k, by_external_id=by_external_id))
        builder.add_edge(graph_module.START, "retrieve")
        builder.add_edge("retrieve", "rank")
        builder.add_edge("rank", "plan")
    builder.add_conditional_edges("plan", fan_out, ["draft"])
    builder.add_edge("draft", "decide")
    builder.add_edge("decide", graph_module.END)
    return builder.compile(checkpointer=checkpointer)


def _fan_out(types: Any) -> Callable[[DecisionState], list[Any]]:
    """The plan's subsets sent to the draft node, one branch each. Each branch gets its task as plain data (a
    checkpointer stores it as it stores the state: no type of ours to register with its serializer)."""

    def fan_out(state: DecisionState) -> list[Any]:
        return [
            types.Send(
                "draft",
                {
                    "index": subset["index"],
                    "context_text": state["context_text"],
                    "lessons": list(subset["texts"]),
                    "experience_ids": list(subset["experience_ids"]),
                    "external_ids": list(subset.get("external_ids") or [None] * len(subset["texts"])),
                },
            )
            for subset in state["plan"]["subsets"]
        ]

    return fan_out


def _draft_node(draft: Callable[[DraftTask], Any]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """The node drafting one branch: your function called with the branch's :class:`DraftTask`."""

    def write(given: Mapping[str, Any]) -> dict[str, Any]:
        task = DraftTask(
            index=int(given["index"]),
            context_text=str(given["context_text"]),
            lessons=tuple(given["lessons"]),
            experience_ids=tuple(given["experience_ids"]),
            external_ids=tuple(given["external_ids"]),
        )
        return {"drafts": [(task.index, draft(task))]}

    return write


def _plan_node(
    client: MemtrialClient,
    agent_id: str,
    retrieve: Callable[[str], Sequence[str] | Sequence[tuple[str, float]]] | None,
    by_external_id: bool,
    rank_k: int | None,
) -> Callable[[DecisionState], dict[str, Any]]:
    """The node asking for the plan (:func:`decision_graph`): on memtrial's picks (``rank_k``), on exactly
    what ``retrieve`` returns less any quarantined since, or on the service's own search without ``retrieve``."""
    field = "retrieved_external_ids" if by_external_id else "retrieved_ids"

    def create(state: DecisionState, options: Mapping[str, Any]) -> Any:
        times = (_given(state, "decision_time"), _given(state, "maturity"))
        return client.create_decision(agent_id, *times, _given(state, "context_text"), **options)

    def plan(state: DecisionState) -> dict[str, Any]:
        options = dict(state.get("options") or {})
        if rank_k is not None:
            options["retrieved_ids"] = [item["id"] for item in state.get("ranked") or []]  # []: no memory
            return {"plan": create(state, options).model_dump(mode="json"), "drafts": None, "decision": None}
        if retrieve is None:
            return {"plan": create(state, options).model_dump(mode="json"), "drafts": None, "decision": None}
        chosen, _ = _split(retrieve(_given(state, "context_text")), "retrieve")
        try:
            planned = create(state, {**options, field: chosen})
        except ServiceError as error:  # one of them quarantined since: plan on the others
            kept = _without_quarantined(client, agent_id, chosen, by_external_id)
            if error.status != 422 or error.field != field or kept == chosen:
                raise
            planned = create(state, {**options, field: kept})
        # None: this plan's drafts start afresh, and the state holds no decision until this plan's is made
        return {"plan": planned.model_dump(mode="json"), "drafts": None, "decision": None}

    return plan


#: the fields a settle body takes (the client's ``settle`` keywords)
SETTLE_FIELDS = frozenset({"prices", "returns", "utilities", "outcome", "rule", "settled_at"})


def settle_node(client: MemtrialClient, agent_id: str) -> Callable[[SettleState], dict[str, Any]]:
    """A node settling ``state["decision_id"]`` with ``state["outcome"]`` (the settle body's fields)."""

    def settle(state: SettleState) -> dict[str, Any]:
        for key in ("decision_id", "outcome"):
            if key not in state:
                raise ValueError(
                    f"{key}: the settle node's state must hold it (decision_id, outcome), got {sorted(state)}"
                )
        outcome = state["outcome"]
        if not isinstance(outcome, Mapping):
            raise ValueError(f"outcome: the settle body's fields as a mapping, got {outcome!r}"[:300])
        unknown = sorted(set(outcome) - SETTLE_FIELDS)
        if unknown:
            raise ValueError(f"outcome: {unknown} are no fields of a settlement (it takes {sorted(SETTLE_FIELDS)})")
        settled = client.settle(agent_id, state["decision_id"], **outcome)
        return {"settlement": settled.model_dump(mode="json")}

    return settle


def rank_node(
    client: MemtrialClient, agent_id: str, *, k: int, by_external_id: bool = False
) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A node putting memtrial's k picks among ``state["candidates"]`` into ``state["ranked"]``.

    candidates: ids (with ``by_external_id``, the external ids your store gave them), at most 100,
    distinct; ``state["similarities"]``: optional, one score per candidate, higher is closer (without
    them the candidates' order is the similarity order). ``ranked``: ``POST .../experiences/rank``'s
    items as JSON dicts, best first, at most k (fewer when fewer candidates come): ``id``,
    ``external_id``, ``reason`` (``similarity``, ``value`` or ``exploration``), ``similarity``,
    ``value`` (utility per decision), ``interval``, ``n`` and ``score``. Quarantined candidates are
    never picked; with no candidate the node asks nothing and ``ranked`` is empty. The service's
    refusals (an unknown or retired id, a duplicate, k out of range) raise
    :class:`~service.client.ServiceError` naming the field.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k: the number of memories to pick must be an integer >= 1, got {k!r}")

    def rank(state: Mapping[str, Any]) -> dict[str, Any]:
        given = state.get("candidates") or []
        if isinstance(given, str | bytes):
            raise ValueError(f"candidates: a list of ids, got the text {given!r}")
        try:
            listed = list(given)
        except TypeError:  # a number: no list at all
            raise ValueError(f"candidates: a list of ids, got {given!r}"[:300]) from None
        if not all(isinstance(c, str) for c in listed):
            raise ValueError(f"candidates: ids are texts, got {listed!r}"[:300])
        candidates = list(listed)
        if not candidates:
            return {"ranked": []}
        similarities = _scores(state.get("similarities"))
        answer = client.rank_experiences(
            agent_id,
            k=min(k, len(candidates)),
            candidate_external_ids=candidates if by_external_id else None,
            candidate_ids=None if by_external_id else candidates,
            similarities=similarities,
        )
        return {"ranked": [_as_json(item) for item in answer["items"]]}

    return rank


def _retrieve_node(
    retrieve: Callable[[str], Sequence[str] | Sequence[tuple[str, float]]],
) -> Callable[[DecisionState], dict[str, Any]]:
    """The node putting what ``retrieve`` finds for the context into ``candidates`` and ``similarities``."""

    def find(state: DecisionState) -> dict[str, Any]:
        candidates, similarities = _split(retrieve(_given(state, "context_text")), "retrieve")
        return {"candidates": candidates, "similarities": similarities}

    return find


def _as_json(item: Any) -> dict[str, Any]:
    dumped = item.model_dump(mode="json") if hasattr(item, "model_dump") else dict(item)
    return dict(dumped)


def _given(state: Mapping[str, Any], key: str) -> Any:
    """A key of the graph's input, or a ValueError naming it (the input holds decision_time, maturity and
    context_text; options and the rest are optional)."""
    if key not in state:
        raise ValueError(
            f"{key}: the graph's input must hold it (decision_time, maturity, context_text), got {sorted(state)}"
        )
    return state[key]


def _split(found: Sequence[str] | Sequence[tuple[str, float]], where: str) -> tuple[list[str], list[float] | None]:
    """A retriever's answer as (candidates, similarities): ids alone (None: their order is the
    similarity order), or (id, similarity) pairs; anything else is a ValueError naming ``where``."""
    if isinstance(found, str | bytes):
        raise ValueError(f"{where}: a list of ids or (id, similarity) pairs, got the text {found!r}")
    try:
        items = list(found)
    except TypeError:  # None, a number: no list at all
        raise ValueError(f"{where}: a list of ids or (id, similarity) pairs, got {found!r}"[:300]) from None
    if not items or isinstance(items[0], str):
        if not all(isinstance(i, str) for i in items):
            raise ValueError(f"{where}: ids or (id, similarity) pairs, not a mix, got {items!r}"[:300])
        return list(items), None  # type: ignore[arg-type]
    try:
        pairs = [(str(i), s) for i, s in items]
    except (TypeError, ValueError):
        raise ValueError(f"{where}: a list of ids or (id, similarity) pairs, got {items!r}"[:300]) from None
    return [i for i, _ in pairs], _scores([s for _, s in pairs], where)


def _scores(values: Any, where: str = "similarities") -> list[float] | None:
    """Similarities as the rank request takes them: finite numbers (None: none given)."""
    if values is None:
        return None
    if not isinstance(values, str | bytes) and not hasattr(values, "__iter__"):  # a number: no list at all
        raise ValueError(f"{where}: similarities are a list of numbers, one per candidate, got {values!r}"[:300])
    if isinstance(values, str | bytes) or any(isinstance(v, str | bytes | bool) for v in values):
        raise ValueError(f"{where}: similarities are numbers, got {values!r}"[:300])
    try:
        scores = [float(v) for v in values]
    except (TypeError, ValueError):
        raise ValueError(f"{where}: similarities are numbers, got {values!r}"[:300]) from None
    if not all(math.isfinite(v) for v in scores):
        raise ValueError(f"{where}: similarities must be finite, got {scores!r}"[:300])
    return scores


def _without_quarantined(client: MemtrialClient, agent_id: str, chosen: list[str], by_external_id: bool) -> list[str]:
    """``chosen`` less the experiences the agent holds in quarantine (by id, or by external id in NFC)."""
    quarantined = {
        (unicodedata.normalize("NFC", e.external_id) if e.external_id is not None else None) if by_external_id else e.id
        for e in client.iter_experiences(agent_id, status="quarantined")
    }
    return [c for c in chosen if (unicodedata.normalize("NFC", c) if by_external_id else c) not in quarantined]
