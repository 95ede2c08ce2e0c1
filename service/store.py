"""Loading and saving an agent's engine, with a per-process cache.

The engine's compact running state lives in ``agents.state`` (its size
depends on the agent's experiences, not on its number of decisions; the
embeddings live in ``experiences``); its history lives in rows
(:class:`service.history.SqlHistory`). A worker keeps the last engine it
saved for each agent together with the state version, within its cache budget
(least recently used evicted, :mod:`service.cache`); a request uses it only
if the database still holds that version, and takes it out of the cache while
it works, so a failed request never leaves a half-updated engine behind.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from memtrial.engine.history import DetachedHistory
from memtrial.engine.lifecycle import MemTrial
from memtrial.records import encode_time
from service.cache import DEFAULT_BUDGET, ByteBudget, engine_bytes
from service.errors import ApiError
from service.history import SqlHistory
from service.models import Agent, Decision, Experience

__all__ = ["EngineCache", "as_utc", "load_agent", "owned_row", "return_engine", "save_engine", "valid_id"]

logger = logging.getLogger("memtrial.service")


def as_utc(value: dt.datetime) -> dt.datetime:
    """Aware UTC datetime (SQLite returns naive values that were stored as UTC)."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


_ID = re.compile(r"^[0-9a-f]{32}$")


def valid_id(value: str) -> bool:
    """Ids the service makes are 32 lowercase hex digits; anything else names nothing (and never reaches the database)."""
    return bool(_ID.match(value))


def shown_id(value: str) -> str:
    """An id as an error says it: whole up to 64 characters, else its start and its length (a 100 KB id in a
    path made a 200 KB answer)."""
    return repr(value) if len(value) <= 64 else f"{value[:64]!r}... ({len(value)} characters)"


def load_agent(session: Session, tenant_id: str, agent_id: str, *, lock: bool) -> Agent:
    """The tenant's agent, locked for the transaction when ``lock``; 404 otherwise."""
    if not valid_id(agent_id):
        raise ApiError(404, "not_found", f"agent {shown_id(agent_id)} not found", "agent_id")
    query = select(Agent).where(Agent.id == agent_id, Agent.tenant_id == tenant_id)
    if lock and session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()
    agent = session.scalars(query).first()
    if agent is None:
        raise ApiError(404, "not_found", f"agent {agent_id!r} not found", "agent_id")
    return agent


Row = TypeVar("Row", Experience, Decision)


def owned_row(session: Session, model: type[Row], agent: Agent, row_id: str, label: str) -> Row:
    """The agent's experience or decision with this id; 404 naming it otherwise."""
    if not valid_id(row_id):
        raise ApiError(404, "not_found", f"{label} {shown_id(row_id)} not found", f"{label}_id")
    row = session.scalars(select(model).where(model.id == row_id, model.agent_id == agent.id)).first()
    if row is None:
        raise ApiError(404, "not_found", f"{label} {row_id!r} not found", f"{label}_id")
    return row


class EngineCache:
    """The engines this worker last saved, by agent, within the worker's cache budget (:mod:`service.cache`)."""

    def __init__(self, budget: ByteBudget | None = None) -> None:
        self.budget = budget if budget is not None else ByteBudget(DEFAULT_BUDGET)
        self._lock = threading.Lock()

    def checkout(self, session: Session, agent: Agent, rows: dict[str, Decision] | None = None) -> MemTrial:
        """The agent's engine at the database's state version, its history attached to this
        transaction (owned by the caller until ``checkin``). rows: decision rows already loaded."""
        start = time.perf_counter()
        cached: tuple[int, MemTrial] | None = self.budget.pop("engine", agent.id)
        source = "cache"
        if cached is not None and cached[0] == agent.state_version:
            engine = cached[1]
        else:
            source = "database"
            found = session.execute(
                select(Experience.id, Experience.embedding).where(Experience.agent_id == agent.id)
            ).all()
            embeddings = {row.id: np.frombuffer(row.embedding, dtype=np.float32) for row in found}
            state = json.loads(agent.state)
            if agent.head is not None:  # what plans changed since the running state was written
                head = json.loads(agent.head)
                state["clock"] = head["clock"]
                state["gate"]["log_length"], state["gate"]["log_head"] = head["log_length"], head["log_head"]
                if "budget" in head:  # a plan spends a draft budget's credit
                    state["budget"] = head["budget"]
            engine = MemTrial.from_dict(state, embeddings=embeddings)
        engine.history = SqlHistory(session, agent, rows)
        elapsed = round(1000 * (time.perf_counter() - start), 2)
        logger.debug("engine checked out", extra={"agent_id": agent.id, "source": source, "ms": elapsed})
        return engine

    def checkin(self, agent_id: str, version: int, engine: MemTrial) -> None:
        engine.history = DetachedHistory()
        with self._lock:  # a newer engine another request checked in stays
            current = self.budget.peek("engine", agent_id)
            if current is None or current[0] <= version:
                self.budget.put("engine", agent_id, (version, engine), engine_bytes(len(engine.experiences)))

    def forget(self, agent_id: str) -> None:
        self.budget.discard("engine", agent_id)


def save_engine(
    session: Session, agent: Agent, engine: MemTrial, cache: EngineCache, *, head_only: bool = False
) -> None:
    """Write the state and give the engine back to the cache once the transaction commits.

    head_only: the request changed only the engine's clock, the log's head and
    a draft budget's credit (a plan): write those few bytes, not the whole
    running state.
    """
    head = {
        "clock": None if engine.clock is None else encode_time(engine.clock),
        "log_length": engine.gate.log.length,
        "log_head": engine.gate.log.head,
    }
    if engine.config.draft_budget is not None:  # a plan at a budget spends its credit
        head["budget"] = engine.credit.to_dict()
    if head_only:
        agent.head = json.dumps(head, sort_keys=True, separators=(",", ":"))
    else:
        agent.state = engine.to_json(embeddings=False, history=False)
        agent.head = None
    agent.state_version += 1
    version = agent.state_version
    after_commit(session, lambda: cache.checkin(agent.id, version, engine))


def return_engine(session: Session, agent: Agent, engine: MemTrial, cache: EngineCache) -> None:
    """Give back an engine that was only read."""
    version = agent.state_version
    after_commit(session, lambda: cache.checkin(agent.id, version, engine))


def after_commit(session: Session, callback: Callable[[], None]) -> None:
    session.info.setdefault("after_commit", []).append(callback)
