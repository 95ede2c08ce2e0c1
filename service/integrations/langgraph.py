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
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from memtrial.errors import import_extra
from service.client import MemtrialClient

__all__ = ["DecisionState", "DraftTask", "SettleState", "decision_graph", "settle_node"]


@dataclass(frozen=True)
class DraftTask:
    """One draft to write: the decision's context and exactly one designed subset's lessons."""

    index: int
    context_text: str
    lessons: tuple[str, ...]
    experience_ids: tuple[str, ...]
    external_ids: tuple[str | None, ...]


class DecisionState(TypedDict, total=False):
    decision_time: str
    maturity: str
    context_text: str
    options: dict[str, Any]  # more create_decision keywords (horizon, reference_weights, ...)
    plan: dict[str, Any]
    drafts: Annotated[list[tuple[int, Any]], operator.add]  # (subset index, draft), merged from the branches
    decision: dict[str, Any]


class SettleState(TypedDict, total=False):
    decision_id: str
    outcome: dict[str, Any]  # the settle body: returns or prices, utilities, or outcome and rule
    settlement: dict[str, Any]


def decision_graph(
    client: MemtrialClient,
    agent_id: str,
    draft: Callable[[DraftTask], Any],
    *,
    retrieve: Callable[[str], Sequence[str]] | None = None,
    by_external_id: bool = False,
) -> Any:
    """The compiled graph of one decision (invoke it with a :class:`DecisionState`).

    draft: your model call for one :class:`DraftTask`, returning the draft (weights by asset, a
    forecast, a number or an answer). retrieve: optional; from the context, the ids (or, with
    ``by_external_id``, the external ids) of the experiences to plan on, best first.
    """
    graph_module = import_extra("langgraph.graph", "langgraph", "the LangGraph decision graph")
    types = import_extra("langgraph.types", "langgraph", "the LangGraph decision graph")

    def plan(state: DecisionState) -> dict[str, Any]:
        options = dict(state.get("options") or {})
        if retrieve is not None:
            chosen = list(retrieve(state["context_text"]))
            if chosen:
                options["retrieved_external_ids" if by_external_id else "retrieved_ids"] = chosen
        planned = client.create_decision(
            agent_id, state["decision_time"], state["maturity"], state["context_text"], **options
        )
        return {"plan": planned.model_dump(mode="json")}

    def fan_out(state: DecisionState) -> list[Any]:
        return [
            types.Send(
                "draft",
                DraftTask(
                    index=subset["index"],
                    context_text=state["context_text"],
                    lessons=tuple(subset["texts"]),
                    experience_ids=tuple(subset["experience_ids"]),
                    external_ids=tuple(subset.get("external_ids") or [None] * len(subset["texts"])),
                ),
            )
            for subset in state["plan"]["subsets"]
        ]

    def write(task: DraftTask) -> dict[str, Any]:
        return {"drafts": [(task.index, draft(task))]}

    def decide(state: DecisionState) -> dict[str, Any]:
        by_index = dict(state["drafts"])
        order = [subset["index"] for subset in state["plan"]["subsets"]]
        decided = client.submit_drafts(agent_id, state["plan"]["decision_id"], [by_index[i] for i in order])
        return {"decision": decided.model_dump(mode="json")}

    builder = graph_module.StateGraph(DecisionState)
    builder.add_node("plan", plan)
    builder.add_node("draft", write)
    builder.add_node("decide", decide)
    builder.add_edge(graph_module.START, "plan")
    builder.add_conditional_edges("plan", fan_out, ["draft"])
    builder.add_edge("draft", "decide")
    builder.add_edge("decide", graph_module.END)
    return builder.compile()


def settle_node(client: MemtrialClient, agent_id: str) -> Callable[[SettleState], dict[str, Any]]:
    """A node settling ``state["decision_id"]`` with ``state["outcome"]`` (the settle body's fields)."""

    def settle(state: SettleState) -> dict[str, Any]:
        settled = client.settle(agent_id, state["decision_id"], **state["outcome"])
        return {"settlement": settled.model_dump(mode="json")}

    return settle
