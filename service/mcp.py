"""``memtrial mcp``: the service's agent loop as Model Context Protocol tools (official ``mcp`` SDK).

The MCP server is a thin, stateless layer over a running memtrial service: each
tool is one call of :class:`~service.client.AsyncMemtrialClient` (so retries
and idempotency keys come with it). It needs the service's URL and an API key
(``--url`` / ``MEMTRIAL_URL``, ``--api-key`` / ``MEMTRIAL_API_KEY``) and speaks
stdio (for a desktop client that starts it) or streamable HTTP (``--transport
http``, at ``http://HOST:PORT/mcp``, behind its own bearer token: ``--token`` /
``MEMTRIAL_MCP_TOKEN``, required).

Tools: ``list_agents``, ``create_agent``, ``add_experiences``,
``search_experiences``, ``rank_experiences`` (the k of your own candidates to use, by similarity and
learned value, quarantined ones left out), ``release_experience`` (a quarantined one, by hand, with a
reason), ``list_quarantined`` (each quarantined experience with its evidence), ``plan_decision`` (the designed subsets and their
texts: draft once per subset), ``draft_prompt`` (one subset's exact prompt, for
a separate model call), ``draft_with_host_model`` (every subset drafted by the
host's model through MCP sampling, one call each, then submitted),
``submit_drafts``, ``settle``, ``correct_outcome``, ``get_values`` (with 90%
intervals and each experience's status), ``get_trust``, ``verify_chain``; the prompt ``draft_subset``. A
refusal of the service comes back as a tool error naming the field and the rule.

A host model must not write all the drafts in one turn: each draft has to be
conditioned on exactly one subset, or the contrasts measure nothing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import hmac
import inspect
import json
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import typer

from memtrial.action.rule import ActionRule
from memtrial.drafting.drafts import DraftError
from memtrial.engine.config import PAPER_RULE
from memtrial.errors import MissingExtraError, import_extra
from memtrial.outcomes.display import UTILITY_UNIT
from service.client import AsyncMemtrialClient, ServiceError
from service.prompts import draft_prompts
from service.schemas import DecisionCreate

__all__ = ["TOOLS", "Service", "build_server", "mcp"]

#: a tool: an async function of the service and the tool's own arguments
ToolFunction = Callable[..., Awaitable[Any]]

#: what settle and correct_outcome answer: utilities and contributions in UTILITY_UNIT, labels for readers
#: and the service's warnings (a session return of 50% or more: percentages sent as fractions?)
SETTLED_KEYS = (
    "decision_id",
    "chosen_utility",
    "contributions",
    "contribution_labels",
    "explanation",
    "score",
    "warnings",
)


def _interval(value: Any) -> dict[str, Any]:
    """A value with its 90% interval: the refit's where there is one, else empirical Bayes (normal approximation)."""
    source = {"full_bayes": "full-Bayes refit", "empirical_bayes": "empirical Bayes (normal approximation)"}
    return {
        "mean": value.mean,
        "sd": value.sd,
        "n": value.n,
        "lower_90": value.lower,
        "upper_90": value.upper,
        "interval": source.get(value.interval or "", "none yet"),
        "p_positive": value.p_positive,
    }


#: Seconds an MCP host gets to answer one sampling request of draft_with_host_model (``--sampling-timeout``).
SAMPLING_TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class Service:
    """The memtrial service the tools call, the API key they call it with, how long the host gets to answer one
    sampling request, and the decisions this server is drafting through its host's model now (a second call for
    one of them is refused before it samples)."""

    url: str
    api_key: str
    sampling_timeout: float = SAMPLING_TIMEOUT_SECONDS
    drafting: set[tuple[str, str]] = field(default_factory=set, compare=False)

    def client(self) -> AsyncMemtrialClient:
        return AsyncMemtrialClient(self.url, self.api_key)


def _refused(error: ServiceError) -> ValueError:
    """A refusal of the service as a tool error, said the same way by every tool, naming the field the service
    named (``field: ...`` at the end)."""
    named = f" (field: {error.field})" if error.field else ""
    return ValueError(f"memtrial refused ({error.status} {error.code}): {error.message}{named}")


async def _call(service: Service, operation: str, *args: Any, **kwargs: Any) -> Any:
    """One client operation, its answer as JSON; a refusal of the service as a tool error."""
    async with service.client() as memtrial:
        try:
            answer = await getattr(memtrial, operation)(*args, **kwargs)
        except ServiceError as error:
            raise _refused(error) from None
        except httpx.TransportError as error:  # said alone ("All connection attempts failed") it names no service
            raise ValueError(
                f"the memtrial service at {service.url} did not answer ({type(error).__name__}: {error}); is it "
                "running there? (memtrial mcp --url, or MEMTRIAL_URL)"
            ) from None
    return answer.model_dump(mode="json") if hasattr(answer, "model_dump") else answer


async def list_agents(service: Service, name: str | None = None) -> dict[str, Any]:
    """The agents of this API key's tenant (first page of up to 200)."""
    return await _call(service, "list_agents", limit=200, name=name)  # type: ignore[no-any-return]


async def create_agent(
    service: Service,
    name: str,
    kind: str = "scored",
    outcomes: list[str] | None = None,
    investor: str | None = None,
    universe: list[dict[str, str]] | None = None,
    action: str = "dial",
    answer: dict[str, Any] | None = None,
    retrieval: str | None = None,
    quarantine: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Create an agent. kind 'scored' (drafts are any JSON; give outcomes for probability forecasts) or
    'portfolio' (give investor and universe: [{asset, asset_class}]). action 'dial' weighs memory by the
    evidence that it helps (anytime e-process); 'gate' acts on memory only once a test passes (the
    paper's rule: the prequential test on date-centred credit over the even half fraction).
    answer: a scored agent's declared draft without outcomes ({"type": "number", "minimum": 0},
    {"type": "choice", "choices": [...]} or {"type": "text"}); retrieval: 'value_aware' (the default: by
    similarity and learned value) or 'similarity'; quarantine: {"enabled": true, "level": 0.05} (the default).
    Every other setting is the REST API's default for a new agent; only the kind's default differs
    (scored, which suits an agent loop). set_curation changes retrieval and quarantine later."""
    paper = {
        "design": PAPER_RULE["design"].value,
        "fallback": PAPER_RULE["fallback"].value,
        "gate": {"test": PAPER_RULE["gate"].test.value},
        "credit": PAPER_RULE["credit"].value,
    }
    created: dict[str, Any] = await _call(
        service,
        "create_agent",
        name,
        investor,
        universe,
        kind=kind,
        outcomes=outcomes,
        action=action,
        answer=answer,
        retrieval=retrieval,
        quarantine=quarantine,
        **({} if action == ActionRule.DIAL else paper),
    )
    return created


async def set_curation(
    service: Service, agent_id: str, retrieval: str | None = None, quarantine: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Change how an agent curates its memory, from its next plan on: retrieval 'value_aware' or 'similarity';
    quarantine, the fields to change ({"enabled": false} turns it off; {"level": 0.01} makes it stricter);
    the others stay. Each change is a 'settings' entry of its hash-chained log. Answers the agent."""
    if retrieval is None and quarantine is None:
        raise ValueError("retrieval, quarantine: give at least one setting to change")
    return await _call(  # type: ignore[no-any-return]
        service, "update_agent", agent_id, retrieval=retrieval, quarantine=quarantine
    )


async def add_experiences(
    service: Service, agent_id: str, texts: list[str], external_ids: list[str] | None = None
) -> dict[str, Any]:
    """Add lessons (experiences) to an agent's memory; answers their ids. external_ids: your own store's id of
    each lesson, in the same order (rank_experiences and plan_decision then take them; a lesson added again
    under its external id is updated, not copied)."""
    if external_ids is not None and len(external_ids) != len(texts):
        raise ValueError(f"external_ids: give one per text ({len(texts)}), got {len(external_ids)}")
    items: list[Any] = (
        list(texts)
        if external_ids is None
        else [{"text": text, "external_id": external} for text, external in zip(texts, external_ids, strict=True)]
    )
    added = await _call(service, "add_experiences", agent_id, items)
    return {"ids": [item["id"] for item in added["items"]]}


async def search_experiences(service: Service, agent_id: str, query: str, k: int = 4) -> dict[str, Any]:
    """The k experiences closest in meaning to the query, each with its similarity (``score``, the cosine)."""
    return await _call(service, "search_experiences", agent_id, query, k)  # type: ignore[no-any-return]


async def rank_experiences(
    service: Service,
    agent_id: str,
    k: int,
    candidate_ids: list[str] | None = None,
    candidate_external_ids: list[str] | None = None,
    similarities: list[float] | None = None,
) -> dict[str, Any]:
    """Rank candidates retrieved from your own memory store: the k to use, best first, each with why it was
    picked (similarity, value or exploration), its value and normal 90% interval (get_values' empirical-Bayes one; after a refit get_values shows the refit's). Give candidate_ids (memtrial ids)
    or candidate_external_ids (your store's ids), up to 100, and optionally one similarity per candidate
    (higher is closer; without them the given order is the similarity order). Quarantined (credibly
    harmful) experiences are never picked."""
    ranked: dict[str, Any] = await _call(
        service,
        "rank_experiences",
        agent_id,
        k=k,
        candidate_ids=candidate_ids,
        candidate_external_ids=candidate_external_ids,
        similarities=similarities,
    )
    return ranked


async def release_experience(service: Service, agent_id: str, experience_id: str, reason: str) -> dict[str, Any]:
    """Release a quarantined experience by hand (get_values shows each experience's status): it is retrieved
    again and its test starts afresh; the agent's log keeps the release with the evidence and the reason. An
    experience that is not quarantined is refused (409 not_quarantined)."""
    released: dict[str, Any] = await _call(service, "release_experience", agent_id, experience_id, reason=reason)
    return released


async def plan_decision(
    service: Service,
    agent_id: str,
    context: str,
    decision_time: str | None = None,
    maturity: str | None = None,
    retrieved_ids: list[str] | None = None,
    retrieved_external_ids: list[str] | None = None,
    horizon: int | None = None,
) -> dict[str, Any]:
    """Plan a decision for the context: retrieves experiences and answers the designed subsets with their
    texts. Draft once per subset, each in a SEPARATE model call conditioned on exactly that subset's texts
    (draft_with_host_model does this through the host's model; draft_prompt gives each call's prompt), then
    submit_drafts in the same order. Times are ISO 8601 (default: now, and maturity one day later).
    retrieved_ids or retrieved_external_ids: plan on these experiences (say, rank_experiences' picks among your
    own store's candidates) instead of the server's search. horizon (portfolio agents): the trading sessions
    the decision holds, whose returns settle gives (the answer says it)."""
    now = dt.datetime.now(dt.UTC)
    when = decision_time or now.isoformat()
    try:
        start = dt.datetime.fromisoformat(when)
    except ValueError:
        raise ValueError(f"decision_time: an ISO 8601 time, e.g. 2026-01-05T12:00:00Z, got {when!r}") from None
    matures = maturity or (start + dt.timedelta(days=1)).isoformat()
    chosen = {
        name: value
        for name, value in (
            ("retrieved_ids", retrieved_ids),
            ("retrieved_external_ids", retrieved_external_ids),
            ("horizon", horizon),
        )
        if value is not None
    }
    plan = await _call(service, "create_decision", agent_id, when, matures, context, **chosen)
    if horizon is None:  # the service's default, for a portfolio agent; a scored decision holds no sessions
        agent = await _call(service, "get_agent", agent_id)
        portfolio = agent.get("kind") != "scored"
        horizon = DecisionCreate.model_fields["horizon"].default if portfolio else None
    return {
        "decision_id": plan["decision_id"],
        "subsets": [{"index": s["index"], "texts": s["texts"]} for s in plan["subsets"]],
        "trust": plan["trust"],
        "dial": plan["dial"],
        "maturity": plan["maturity"],
        # the sessions settle gives returns for (portfolio agents): as asked, or the service's default; None for
        # a scored agent's decision
        "horizon": horizon,
    }


async def submit_drafts(
    service: Service, agent_id: str, decision_id: str, drafts: list[Any], reference: int | None = None
) -> dict[str, Any]:
    """Submit one draft per designed subset (in plan order). Answers what to act on ('chosen' for scored
    agents, 'weights' for portfolios) and why ('explanation')."""
    decision = await _call(service, "submit_drafts", agent_id, decision_id, drafts, reference)
    keys = ("decision_id", "action", "chosen", "weights", "played", "explanation", "dial")
    return {key: decision.get(key) for key in keys}


async def settle(
    service: Service,
    agent_id: str,
    decision_id: str,
    outcome: Any = None,
    rule: str | None = None,
    utilities: list[float] | None = None,
    returns: dict[str, list[float]] | None = None,
    settled_at: str | None = None,
) -> dict[str, Any]:
    """Settle a matured decision: scored agents give an outcome and a rule (brier, log, exact, abs_error) or
    one utility per draft; portfolio agents give returns per asset. Answers each experience's contribution
    (in utility per decision, by id, with each experience's label and a readable explanation)."""
    answer = await _call(
        service,
        "settle",
        agent_id,
        decision_id,
        outcome=outcome,
        rule=rule,
        utilities=utilities,
        returns=returns,
        settled_at=settled_at,
    )
    return {"unit": UTILITY_UNIT, **{key: answer[key] for key in SETTLED_KEYS}}


async def correct_outcome(
    service: Service,
    agent_id: str,
    decision_id: str,
    reason: str,
    outcome: Any = None,
    rule: str | None = None,
    utilities: list[float] | None = None,
    returns: dict[str, list[float]] | None = None,
    settled_at: str | None = None,
) -> dict[str, Any]:
    """Replace a settled decision's wrong outcome (a bad price feed, a mis-graded answer), with the reason.
    The agent relearns as if it had been settled right; the wrong outcome stays in the log, superseded.
    Answers the corrected settlement and each correction so far: its reason, when, and the score and chosen
    utility it replaced (get_trust shows every score as it stands now: later scores may change too)."""
    answer = await _call(
        service,
        "correct",
        agent_id,
        decision_id,
        reason=reason,
        outcome=outcome,
        rule=rule,
        utilities=utilities,
        returns=returns,
        settled_at=settled_at,
    )
    corrections = [
        {
            "reason": c["reason"],
            "corrected_at": c["corrected_at"],
            "score_before": c["superseded"].get("score"),
            "chosen_utility_before": c["superseded"].get("chosen_utility"),
        }
        for c in answer["corrections"]
    ]
    return {"unit": UTILITY_UNIT, **{key: answer[key] for key in SETTLED_KEYS}, "corrections": corrections}


async def get_values(service: Service, agent_id: str) -> dict[str, Any]:
    """What each experience is worth, in utility per decision: posterior mean, sd, number of scored uses and a
    90% interval."""
    async with service.client() as memtrial:
        try:
            values = await memtrial.values(agent_id)
        except ServiceError as error:
            raise _refused(error) from None
    return {
        "learner_mode": values.learner_mode,
        "unit": UTILITY_UNIT,
        "experiences": [
            {
                "id": e,
                "label": v.label,
                "text": v.text,
                "external_id": v.external_id,
                "status": v.status,  # active, quarantined (kept out of retrieval: release_experience) or retired
                "changed_at": v.changed_at,
                **_interval(v),
            }
            for e, v in values.values.items()
        ],
    }


async def list_quarantined(service: Service, agent_id: str) -> dict[str, Any]:
    """The experiences in quarantine (credibly harmful: left out of retrieval and of rank's picks), each with
    the evidence that put it there: the e-value its test reached, the threshold it crossed, the contributions
    it counted and their mean (utility per decision), and the decision at which it fired. release_experience
    returns one to retrieval."""
    quarantined: list[dict[str, Any]] = []
    async with service.client() as memtrial:
        try:
            async for experience in memtrial.iter_experiences(agent_id, status="quarantined"):
                quarantined.append(
                    {
                        "id": experience.id,
                        "text": experience.text,
                        "external_id": experience.external_id,
                        "evidence": None
                        if experience.quarantine is None
                        else experience.quarantine.model_dump(mode="json"),
                    }
                )
        except ServiceError as error:
            raise _refused(error) from None
    return {"unit": UTILITY_UNIT, "experiences": quarantined}


async def _subset_prompts(service: Service, agent_id: str, decision_id: str) -> tuple[str, list[str], Any, list[Any]]:
    """The decision's system prompt, one prompt per subset of its plan, the reply check, the subsets."""
    async with service.client() as memtrial:
        try:
            agent = await memtrial.get_agent(agent_id)
            record = await memtrial.get_decision(agent_id, decision_id)
        except ServiceError as error:
            raise _refused(error) from None
    if record.plan is None or record.context_text is None:
        raise ValueError(f"decision {decision_id!r} has no plan with its context to draft from")
    settings = agent.model_dump(mode="json")
    subsets = record.plan.subsets
    system, prompts, parse = draft_prompts(settings, record.context_text, [s.texts for s in subsets])
    return system, prompts, parse, subsets


async def draft_prompt(service: Service, agent_id: str, decision_id: str, index: int) -> dict[str, Any]:
    """The exact prompt for ONE designed subset's draft (system and user message). Send it to a fresh model
    call of its own (a sub-agent, a separate completion) for each subset, never several subsets in one
    turn: each draft must see exactly its subset's lessons. Then submit_drafts with all of them in order."""
    system, prompts, _, subsets = await _subset_prompts(service, agent_id, decision_id)
    if not 0 <= index < len(prompts):
        raise ValueError(f"index: the plan has subsets 0 to {len(prompts) - 1}, got {index}")
    return {"index": index, "system": system, "prompt": prompts[index], "lessons": subsets[index].texts}


async def _sampled_draft(
    ctx: Any, system: str, prompt: str, parse: Any, max_retries: int, timeout: float
) -> tuple[Any, int]:
    """One subset's draft by the host's model (MCP sampling), retried while its answer is malformed, with the
    number of sampling requests it took; each request answered within ``timeout`` seconds (else TimeoutError)."""
    import anyio

    types = import_extra("mcp.types", "mcp", "the MCP server")
    for attempt in range(max_retries + 1):
        with anyio.fail_after(timeout):
            reply = await ctx.session.create_message(
                messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
                system_prompt=system,
                max_tokens=800,
            )
        text = getattr(reply.content, "text", "")
        try:
            return parse(text), attempt + 1
        except DraftError:
            continue
    tries = max_retries + 1
    raise ValueError(f"the host model's answers were malformed {tries} time{'s' if tries > 1 else ''} in a row")


async def _sample_all(
    ctx: Any, system: str, prompts: list[str], parse: Any, max_retries: int, timeout: float, decision_id: str
) -> list[tuple[Any, int]]:
    """Every subset's draft by the host's model, sampled side by side. When one fails (malformed answers, or a
    request left unanswered for ``timeout`` seconds) the call stops waiting for the others at once: none of them
    is retried after it failed (the host is not told: what it answers later is dropped)."""
    tasks = [asyncio.ensure_future(_sampled_draft(ctx, system, p, parse, max_retries, timeout)) for p in prompts]
    try:
        return list(await asyncio.gather(*tasks))
    except TimeoutError:
        raise ValueError(
            f"the host did not answer a sampling request within {timeout:g} s (memtrial mcp --sampling-timeout): "
            f"nothing was submitted and decision {decision_id!r} stays planned; call draft_with_host_model again, "
            "or draft each subset with draft_prompt and submit_drafts"
        ) from None
    finally:
        for task in tasks:
            task.cancel()


async def draft_with_host_model(
    service: Service, agent_id: str, decision_id: str, ctx: Any, max_retries: int = 2
) -> dict[str, Any]:
    """Draft every designed subset through the host's own model (MCP sampling), one separate model call per
    subset conditioned on exactly its lessons, check each answer (retried when malformed, never guessed),
    and submit the drafts. Needs a host that supports sampling; otherwise use draft_prompt per subset."""
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or not 0 <= max_retries <= 5:
        raise ValueError(f"max_retries: the retries of a malformed answer per subset, 0 to 5, got {max_retries!r}")
    capabilities = ctx.session.client_params.capabilities if ctx.session.client_params else None
    if capabilities is None or capabilities.sampling is None:
        raise ValueError(
            "this MCP host does not offer sampling: call draft_prompt for each subset and send each prompt "
            "to a separate model call, then submit_drafts"
        )
    drafting = (agent_id, decision_id)
    if drafting in service.drafting:  # both would pay for every subset's calls, and one would be refused
        raise ValueError(
            f"decision_id: decision {decision_id!r} is being drafted by another draft_with_host_model call: "
            "nothing was drafted (that call ends at the latest when its host leaves a sampling request unanswered "
            f"for {service.sampling_timeout:g} s, the server's --sampling-timeout)"
        )
    service.drafting.add(drafting)
    try:
        status = (await _call(service, "get_decision", agent_id, decision_id))["status"]
        if status != "planned":  # its drafts are in (or it was withdrawn): drafting again would pay for nothing
            raise ValueError(
                f"decision_id: decision {decision_id!r} is {status}, not waiting for drafts: nothing was drafted"
            )
        system, prompts, parse, _ = await _subset_prompts(service, agent_id, decision_id)
        sampled = await _sample_all(ctx, system, prompts, parse, max_retries, service.sampling_timeout, decision_id)
        decision = await _call(service, "submit_drafts", agent_id, decision_id, [draft for draft, _ in sampled])
    finally:
        service.drafting.discard(drafting)
    keys = ("decision_id", "action", "chosen", "weights", "played", "explanation", "dial", "draft_calls")
    # model_calls: every sampling request sent, the retries of malformed answers included
    return {**{key: decision.get(key) for key in keys}, "model_calls": sum(calls for _, calls in sampled)}


async def draft_subset(service: Service, agent_id: str, decision_id: str, index: str) -> list[Any]:
    """One designed subset's draft as a prompt: run it in its own conversation, once per subset."""
    system, prompts, _, _ = await _subset_prompts(service, agent_id, decision_id)
    try:
        position = int(index)
    except ValueError:
        raise ValueError(f"index: a subset's index, 0 to {len(prompts) - 1}, got {index!r}") from None
    if not 0 <= position < len(prompts):
        raise ValueError(f"index: the plan has subsets 0 to {len(prompts) - 1}, got {index}")
    base = import_extra("mcp.server.fastmcp.prompts.base", "mcp", "the MCP server")
    return [base.UserMessage(f"{system}\n\n{prompts[position]}")]


async def get_trust(service: Service, agent_id: str) -> dict[str, Any]:
    """Whether memory is trusted yet: the gate's state, its statistic and the most recent scores."""
    return await _call(service, "trust", agent_id, limit=20)  # type: ignore[no-any-return]


async def verify_chain(service: Service, agent_id: str) -> dict[str, Any]:
    """Re-check the hash chain of the agent's pre-registered predictions and scores."""
    return await _call(service, "verify", agent_id)  # type: ignore[no-any-return]


#: the tools, in the order the server lists them
TOOLS: tuple[ToolFunction, ...] = (
    list_agents,
    create_agent,
    set_curation,
    add_experiences,
    search_experiences,
    rank_experiences,
    release_experience,
    plan_decision,
    submit_drafts,
    settle,
    correct_outcome,
    get_values,
    list_quarantined,
    draft_prompt,
    draft_with_host_model,
    get_trust,
    verify_chain,
)


def _bind(tool: ToolFunction, service: Service, context: Any = None) -> ToolFunction:
    """``tool`` with its first parameter (the service) given: the signature, name and docstring FastMCP
    reads are the tool's own, less that parameter (``context``: the type FastMCP passes as ``ctx``)."""

    @functools.wraps(tool)
    async def bound(*args: Any, **kwargs: Any) -> Any:
        return await tool(service, *args, **kwargs)

    signature = inspect.signature(tool, eval_str=True)
    parameters = list(signature.parameters.values())[1:]
    if context is not None:
        parameters = [p.replace(annotation=context) if p.name == "ctx" else p for p in parameters]
    bound.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    bound.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": signature.return_annotation}
    del bound.__wrapped__  # FastMCP reads the signature above, not the tool's
    return bound


def build_server(
    url: str,
    api_key: str,
    host: str = "127.0.0.1",
    port: int = 8765,
    sampling_timeout: float = SAMPLING_TIMEOUT_SECONDS,
) -> Any:
    """The MCP server for one service and key (tools answer JSON objects)."""
    fastmcp = import_extra("mcp.server.fastmcp", "mcp", "the MCP server")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per HTTP call would drown the client's log
    server = fastmcp.FastMCP(
        "memtrial",
        instructions=(
            "Memory credit assignment for a decision agent. Loop: plan_decision (gives the designed subsets of retrieved "
            "experiences), draft once per subset conditioned on exactly that subset's texts, submit_drafts, and settle when "
            "the outcome is known. get_values shows what each experience is worth; get_trust whether memory is trusted yet."
        ),
        host=host,
        port=port,
        log_level="WARNING",
    )
    service = Service(url, api_key, sampling_timeout)
    for tool in TOOLS:
        server.tool()(_bind(tool, service, fastmcp.Context))
    server.prompt()(_bind(draft_subset, service))
    return server


MIN_TOKEN_LENGTH = 16


class BearerGuard:
    """The MCP HTTP endpoint's own authentication: every request must carry ``Authorization: Bearer <token>``
    (the operator's ``MEMTRIAL_MCP_TOKEN``, compared in constant time); anything else answers 401. The
    service's API key stays inside this server and is never what a client sends."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.token = app, token.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            header = dict(scope.get("headers", [])).get(b"authorization", b"")
            scheme, _, given = header.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.token):
                body = json.dumps(
                    {
                        "error": {
                            "code": "unauthorized",
                            "message": "send 'Authorization: Bearer <token>' (the MCP server's token)",
                            "field": "authorization",
                        }
                    }
                ).encode()
                headers = [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="memtrial-mcp"'),
                ]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(
    url: str,
    api_key: str,
    token: str,
    host: str = "127.0.0.1",
    port: int = 8765,
    sampling_timeout: float = SAMPLING_TIMEOUT_SECONDS,
) -> Any:
    """The streamable-HTTP MCP application (at /mcp) behind its bearer token."""
    return BearerGuard(build_server(url, api_key, host, port, sampling_timeout).streamable_http_app(), token)


def service_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be the memtrial service's address (None: it can, as far as its form tells): an http(s)
    URL with a host, and no query or fragment (the tools' paths are added to it)."""
    from urllib.parse import urlsplit

    if url != url.strip():  # urlsplit would take it, the client would not
        return "must not begin or end with white space"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port that is no number raises here)
    except ValueError as error:
        return f"must be an http(s) URL such as http://127.0.0.1:8000 ({error})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http(s) URL with a host, such as http://127.0.0.1:8000"
    if parts.query or parts.fragment:
        return "must be the service's address, without a query or a fragment"
    return None


def mcp(
    transport: str = typer.Option("stdio", help="stdio (started by an MCP client) or http (streamable HTTP at /mcp)."),
    url: str = typer.Option(
        os.environ.get("MEMTRIAL_URL", "http://127.0.0.1:8000"), help="The memtrial service (default: MEMTRIAL_URL)."
    ),
    api_key: str | None = typer.Option(None, help="An API key of the service (default: MEMTRIAL_API_KEY)."),
    host: str = typer.Option("127.0.0.1", help="http transport: interface to listen on."),
    port: int = typer.Option(8765, min=1, max=65535, help="http transport: port to listen on."),
    token: str | None = typer.Option(
        None, help="http transport: the bearer token clients must send (default: MEMTRIAL_MCP_TOKEN; required)."
    ),
    sampling_timeout: float = typer.Option(
        SAMPLING_TIMEOUT_SECONDS,
        min=1.0,
        max=3600.0,
        help="Seconds the host gets to answer one sampling request of draft_with_host_model (then the call fails "
        "and its decision stays planned).",
    ),
) -> None:
    """Serve the agent loop as MCP tools over stdio or streamable HTTP (HTTP requires a bearer token)."""
    try:
        import_extra("mcp.server.fastmcp", "mcp", "memtrial mcp")
    except MissingExtraError as missing:
        typer.echo(f"error: {missing.message}", err=True)
        raise typer.Exit(code=2) from None
    key = api_key or os.environ.get("MEMTRIAL_API_KEY")
    if not key:
        typer.echo(
            "error: an API key is needed: --api-key or MEMTRIAL_API_KEY (memtrial tenants create prints one)", err=True
        )
        raise typer.Exit(code=2)
    if transport not in ("stdio", "http"):
        typer.echo(f"error: transport must be 'stdio' or 'http', got {transport!r}", err=True)
        raise typer.Exit(code=2)
    if (problem := service_url_problem(url)) is not None:  # before a host's first tool call finds it
        typer.echo(f"error: --url (or MEMTRIAL_URL) {problem}, got {url!r}", err=True)
        raise typer.Exit(code=2)
    if transport == "stdio":
        build_server(url, key, host, port, sampling_timeout).run("stdio")
        return
    secret = token or os.environ.get("MEMTRIAL_MCP_TOKEN")
    if not secret or len(secret) < MIN_TOKEN_LENGTH:
        typer.echo(
            f"error: --transport http needs a bearer token of at least {MIN_TOKEN_LENGTH} characters: --token or MEMTRIAL_MCP_TOKEN "
            "(e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))'); clients send it as 'Authorization: Bearer <token>'",
            err=True,
        )
        raise typer.Exit(code=2)
    import uvicorn

    uvicorn.run(http_app(url, key, secret, host, port, sampling_timeout), host=host, port=port, log_level="warning")
