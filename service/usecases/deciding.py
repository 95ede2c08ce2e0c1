"""Deciding: act on one draft per designed subset, and the decision request that plans and, with
server drafting, drafts and decides.

Server drafting runs in three steps so that no database lock is held while
the LLM answers: plan and commit, draft concurrently, then decide and commit
(the decision and the key's answer in one transaction). Between them the
request leases its ``Idempotency-Key`` and its planned decision
(:mod:`service.leases`). If any step after planning fails (the drafter, a lock
wait, a conflicting write), the key is released, so a retry with it runs again,
and the plan is withdrawn (status ``failed`` with the reason, a ``withdrawal``
entry closes its registered prediction); then the error answers.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Annotated, Any

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, TypeAdapter, ValidationError
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from memtrial.errors import MemtrialError
from memtrial.outcomes.display import name_experiences
from memtrial.records import Decision as CoreDecision
from memtrial.records import DecisionKind
from service.db import transaction
from service.deps import Services
from service.drafting import Retries, draft_all
from service.errors import ApiError
from service.idempotency import Idempotency
from service.leases import Renewal, abandon, abandon_while_stopping, drafting_in_flight, stopping_bound
from service.models import Decision
from service.modes import DecisionStatus
from service.prompts import draft_prompts
from service.providers import Provider
from service.schemas import (
    DecisionCreate,
    DecisionPublic,
    DialPublic,
    PlanPublic,
    PortfolioDrafts,
    check_portfolio_drafts,
)
from service.scored import check_declared_answers, chosen_draft, scored_drafts
from service.store import load_agent, owned_row, return_engine, save_engine
from service.tracing import span
from service.universe import Universe
from service.usecases.planning import agent_kind, plan
from service.usecases.unit import agent_write
from service.views import plan_labels, shown, trust_public

_PORTFOLIO_DRAFTS: TypeAdapter[list[dict[str, float]]] = TypeAdapter(
    Annotated[PortfolioDrafts, AfterValidator(check_portfolio_drafts)]
)


def _portfolio_drafts(drafts: list[object]) -> list[dict[str, float]]:
    """Portfolio drafts checked as the request body would check them (same errors, same fields)."""
    try:
        return _PORTFOLIO_DRAFTS.validate_python(drafts)
    except ValidationError as error:
        raise RequestValidationError(
            [{**item, "loc": ("body", "drafts", *item["loc"])} for item in error.errors()]
        ) from None


def _check_count(row: Decision, drafts: list[Any]) -> None:
    """One draft per designed subset, in the request's words for every kind (the engine names what it is given)."""
    runs = len((row.plan or {}).get("subsets", []))
    if row.status == DecisionStatus.FAILED:  # withdrawn: the engine's 409 says so, whatever was sent
        return
    if len(drafts) != runs:
        raise ApiError(422, "invalid", f"drafts: give one per designed subset ({runs}), got {len(drafts)}", "drafts")


def _check_answers_again(row: Decision, drafts: list[Any]) -> None:
    """Answers posted to a decision already decided must be those it was decided on: they give the engine no
    numbers to compare (it checks their count), so the stored ones are compared here."""
    if row.decision is not None and row.decision.get("drafts") != list(drafts):
        raise ApiError(409, "conflict", f"decision {row.id!r} was already decided with other drafts", "drafts")


def decide(
    services: Services,
    tenant_id: str,
    agent_id: str,
    decision_id: str,
    drafts: list[Any],
    guard: Idempotency,
    reference: int | None = None,
    retries: Retries | None = None,
    *,
    server: bool = False,
) -> DecisionPublic:
    """Act on one draft per designed subset (``server``: the drafts of the server-drafting request that
    planned the decision, completing its key with 201 in the same transaction; ``retries`` those drafts'
    retries, settled with the draft budget here)."""
    limit = services.settings.max_drafts_per_decision
    if len(drafts) > limit:
        raise ApiError(
            422,
            "invalid",
            f"drafts: a decision takes at most {limit} drafts on this server (MEMTRIAL_MAX_DRAFTS_PER_DECISION), got {len(drafts)}",
            "drafts",
        )
    with agent_write(services, tenant_id, agent_id, guard, claim=not server) as (session, agent):
        row = owned_row(session, Decision, agent, decision_id, "decision")
        if row.status == DecisionStatus.SETTLED:
            raise ApiError(409, "conflict", f"decision {decision_id!r} is already settled", "decision_id")
        if not server and row.status == DecisionStatus.PLANNED and row.drafting_until is not None:
            raise ApiError(
                409,
                "conflict",
                f"decision {decision_id!r} is being drafted by the server (it was planned with drafting 'server'); "
                "its own request posts its drafts",
                "decision_id",
            )
        _check_count(row, drafts)
        if agent_kind(agent.settings) is DecisionKind.SCORED:
            if row.status == DecisionStatus.PLANNED:  # drafts posted again are compared with those decided on
                check_declared_answers(agent.settings, drafts)
            vectors = scored_drafts(agent.settings, drafts)
            if vectors is None:
                _check_answers_again(row, drafts)
            engine = services.engines.checkout(session, agent, {row.id: row})
            with span("engine.decide", drafts=len(drafts)):
                if vectors is not None:
                    decision = engine.decide_scored(
                        decision_id, vectors=vectors, reference=0 if reference is None else reference
                    )
                else:
                    decision = engine.decide_scored(
                        decision_id, n_drafts=len(drafts), reference=0 if reference is None else reference
                    )
            public = _decision_public(row, decision, None, drafts, chosen_draft(agent.settings, drafts, decision))
        else:
            if reference is not None:
                raise ApiError(
                    422,
                    "invalid",
                    "reference: only scored decisions designate a reference draft (a portfolio decision anchors on its reference weights)",
                    "reference",
                )
            universe = Universe(agent.settings["universe"])
            matrix = [universe.vector(draft, f"drafts.{i}") for i, draft in enumerate(_portfolio_drafts(drafts))]
            engine = services.engines.checkout(session, agent, {row.id: row})
            with span("engine.decide", drafts=len(matrix)):
                decision = engine.decide(decision_id, matrix)
            public = _decision_public(row, decision, universe)
        if row.decision is None:
            row.decision = public.model_dump(mode="json", exclude={"plan"})
            row.status = DecisionStatus.DECIDED
            row.drafting_until = None
        guard.complete(201 if server else 200, public)
        if retries is None:
            return_engine(session, agent, engine, services.engines)  # deciding changes no running state
        else:  # the retries not sent go back to the draft budget's credit
            engine.release_calls(decision_id, retries.used + retries.left, retries.used)
            save_engine(session, agent, engine, services.engines, head_only=True)
        return public


def _decision_public(
    row: Decision,
    decision: CoreDecision,
    universe: Universe | None,
    drafts: list[Any] | None = None,
    chosen: Any = None,
) -> DecisionPublic:
    return DecisionPublic(
        decision_id=row.id,
        status=DecisionStatus.DECIDED,
        weights=None if universe is None else universe.mapping(decision.weights),
        action=decision.action.value,
        subset=None if decision.subset is None else [str(e) for e in decision.subset],
        mask=decision.mask,
        q=decision.q,
        trust=trust_public(decision.trust),
        predictions={str(e): shown(v) for e, v in decision.predictions.items()},
        predicted_gain=decision.predicted_gain,
        learner_mode=decision.learner_mode,
        explanation=name_experiences(decision.explanation, plan_labels(row.plan)),
        drafts=list(drafts or []) if universe is None else [universe.mapping(d) for d in decision.drafts],
        dial=None if decision.dial is None else DialPublic(**decision.dial.to_dict()),
        plan=PlanPublic(**row.plan),
        chosen=chosen,
        played=decision.played,
        reference=decision.reference_index,
        draft_calls=decision.draft_calls,
    )


async def create(
    services: Services, tenant_id: str, agent_id: str, body: DecisionCreate, request: Request, key: str | None
) -> PlanPublic | DecisionPublic:
    """Plan a decision; with server drafting, draft through the agent's provider and decide."""
    provider = None
    if body.drafting == "server":
        with transaction(services.sessions) as session:
            drafter = load_agent(session, tenant_id, agent_id, lock=False).settings.get("drafter")
        if drafter is None:
            raise ApiError(
                422, "invalid", "drafting: this agent has no drafter configured; use client drafting", "drafting"
            )
        provider = services.providers.get(str(drafter.get("provider")))
        if provider is None:
            raise ApiError(
                422,
                "invalid",
                f"drafting: the agent's provider {drafter.get('provider')!r} is not configured on this server; update the agent's drafter",
                "drafting",
            )
    guard = Idempotency(key, tenant_id, request, body)
    if body.drafting == "client":
        planned, _, _ = await run_in_threadpool(plan, services, tenant_id, agent_id, body, guard)
        return planned
    assert provider is not None
    with drafting_in_flight():  # a stopping server waits for it to let go of what it holds
        return await _draft_and_decide(services, tenant_id, agent_id, body, guard, provider)


STOPPED = "the server stopped before deciding"


class _Planning:
    """A server-drafted decision's plan as its thread runs it: what the abandon of a request the server stopped
    while it planned waits for (the thread goes on, and may commit the plan and the key's lease)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: tuple[PlanPublic, dict[str, object], Retries] | None = None
        self._lock = threading.Lock()
        self._started = self._abandoned = False

    def run(self, *arguments: Any) -> tuple[PlanPublic, dict[str, object], Retries]:
        with self._lock:
            if self._abandoned:  # cancelled before its thread took it up: it never plans
                raise asyncio.CancelledError("the server stopped before the plan started")
            self._started = True
        try:
            self.result = plan(*arguments)
            return self.result
        finally:
            self.done.set()

    def abandon(self) -> bool:
        """The request was cancelled: whether its plan started (so may commit, and its abandon must wait for it);
        one not started never will."""
        with self._lock:
            self._abandoned = True
            return self._started

    def made(self, timeout: float) -> tuple[str, Retries | None] | None:
        """(decision id, retries) once the plan committed; None where it wrote nothing (or never ended)."""
        if not self.done.wait(timeout) or self.result is None:
            return None
        planned, _, retries = self.result
        return planned.decision_id, retries


async def _draft_and_decide(
    services: Services, tenant_id: str, agent_id: str, body: DecisionCreate, guard: Idempotency, provider: Provider
) -> DecisionPublic:
    planning = _Planning()
    try:
        planned, settings, retries = await run_in_threadpool(planning.run, services, tenant_id, agent_id, body, guard)
    except asyncio.CancelledError:  # the server is stopping while the plan runs in its thread (or waits for one)
        if planning.abandon():
            made = functools.partial(planning.made, stopping_bound(services))
            abandon_while_stopping(services, tenant_id, agent_id, STOPPED, made, guard)
        raise
    system, prompts, parse = draft_prompts(settings, body.context_text, [s.texts for s in planned.subsets])
    decision_id = planned.decision_id
    with Renewal(services, guard, decision_id):
        try:
            drafts = await draft_all(
                provider,
                settings["drafter"],  # type: ignore[arg-type]
                system,
                prompts,
                parse,
                services.settings.llm_timeout_seconds,
                retries,
            )
            return await run_in_threadpool(
                decide, services, tenant_id, agent_id, decision_id, drafts, guard, None, retries, server=True
            )
        except asyncio.CancelledError:  # the server is stopping: let go, and its shutdown waits for the release
            abandon_while_stopping(services, tenant_id, agent_id, STOPPED, lambda: (decision_id, retries), guard)
            raise
        except Exception as failure:
            reason = _failure_reason(failure)
            await run_in_threadpool(abandon, services, tenant_id, agent_id, decision_id, guard, reason, retries)
            raise


def _failure_reason(failure: Exception) -> str:
    """Why a server-drafted decision failed, in words that reveal no request content."""
    if isinstance(failure, ApiError | MemtrialError):
        return failure.message
    if isinstance(failure, OperationalError | PoolTimeoutError):
        return "the database did not answer in time while deciding (the agent was locked by another writer too long)"
    return f"the server failed while deciding ({type(failure).__name__})"
