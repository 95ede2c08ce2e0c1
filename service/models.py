"""ORM tables (SQLAlchemy 2, typed). Core records convert to and from these at the boundary."""

from __future__ import annotations

import datetime as dt
import secrets
import time
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "Agent",
    "ApiKey",
    "Base",
    "CheckpointRow",
    "Contribution",
    "Decision",
    "Experience",
    "IdempotencyRecord",
    "LogRow",
    "RefitJob",
    "Tenant",
    "new_id",
    "utcnow",
]


def new_id() -> str:
    """A 32-hex id that sorts by creation time: 48 bits of milliseconds, then 80 random bits."""
    milliseconds = int(time.time() * 1000)
    return f"{milliseconds:012x}{secrets.randbits(80):020x}"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class Agent(Base):
    __tablename__ = "agents"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    gate_hash: Mapped[str] = mapped_column(String(64))
    # the engine's running state, read only when a worker's cached engine is stale; what a plan
    # changes (the clock and the log's head) lives in ``head``, so a plan rewrites a few bytes
    state: Mapped[str] = mapped_column(Text, deferred=True)
    head: Mapped[str | None] = mapped_column(Text, nullable=True)
    state_version: Mapped[int] = mapped_column(Integer, default=0)
    index_version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Experience(Base):
    __tablename__ = "experiences"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(32), unique=True, default=new_id)
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    text: Mapped[str] = mapped_column(Text)
    # the experience's id in the client's own memory store (unique per agent; null: it lives only here)
    external_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    structured: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    embedding: Mapped[bytes] = mapped_column(LargeBinary)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)

    __table_args__ = (
        Index("ix_experiences_agent_seq", "agent_id", "seq"),
        Index("ux_experiences_agent_external", "agent_id", "external_id", unique=True),
    )


class Decision(Base):
    __tablename__ = "decisions"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(32), unique=True, default=new_id)
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16))
    decision_time: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    maturity: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    plan: Mapped[dict[str, Any]] = mapped_column(JSON)
    decision: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    settlement: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    settle_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # the engine's own records of this decision (canonical JSON), each written once
    engine_plan: Mapped[str | None] = mapped_column(Text, nullable=True)
    engine_decision: Mapped[str | None] = mapped_column(Text, nullable=True)
    engine_settlement: Mapped[str | None] = mapped_column(Text, nullable=True)
    failure: Mapped[str | None] = mapped_column(Text, nullable=True)  # why a failed decision was withdrawn
    # server drafting: past this the request drafting it is gone and the decision is withdrawn
    # (renewed while that request runs; None once decided or withdrawn, and for client drafting)
    drafting_until: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (
        Index("ix_decisions_agent_seq", "agent_id", "seq"),
        Index("ix_decisions_agent_status_seq", "agent_id", "status", "seq"),
        Index("ix_decisions_drafting_until", "drafting_until"),
    )


class LogRow(Base):
    """One entry of an agent's hash-chained prediction log, written once, never updated.

    payload is the entry's canonical JSON (exactly what was hashed); score and
    statistic (the gate's p-value or e-value after the score) are copies for
    queries, outside the hash.
    """

    __tablename__ = "log_entries"

    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True)
    index: Mapped[int] = mapped_column("entry_index", Integer, primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String(16))
    decision_id: Mapped[str] = mapped_column(String(64))
    payload: Mapped[str] = mapped_column(Text)
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    statistic: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    __table_args__ = (Index("ix_log_entries_agent_decision", "agent_id", "decision_id"),)


class CheckpointRow(Base):
    """An agent's engine state at a log position, where a correction's replay starts (:mod:`memtrial.engine.checkpoints`).

    state is the checkpoint's JSON; an agent keeps the newest few (a correction replaces those past
    the score it corrects).
    """

    __tablename__ = "checkpoints"

    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    state: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RefitJob(Base):
    """A background full-Bayes refit of an agent's values and its stored posterior (:mod:`service.refits`)."""

    __tablename__ = "refit_jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16))
    method: Mapped[str] = mapped_column(String(8))
    state_version: Mapped[int] = mapped_column(Integer)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # the worker holding the job refreshes this; a job whose heartbeat stops is marked failed
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    worker: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # submitted again after the process running it stopped beating (bounded); the records it fits
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    through_seq: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Contribution(Base):
    __tablename__ = "contributions"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    experience_id: Mapped[str] = mapped_column(String(32))
    decision_id: Mapped[str] = mapped_column(String(32))
    decision_time: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    contribution: Mapped[float] = mapped_column(Float)
    centred: Mapped[float] = mapped_column(Float)

    __table_args__ = (
        UniqueConstraint("decision_id", "experience_id", name="uq_contribution_decision_experience"),
        Index("ix_contributions_agent_experience", "agent_id", "experience_id"),
        Index("ix_contributions_agent_seq", "agent_id", "seq"),
    )


class IdempotencyRecord(Base):
    """The first answer to a request sent with an ``Idempotency-Key`` (per tenant).

    status_code and response are None while that request is still running. A request that holds
    its key across several transactions (server drafting) leases it: past ``lease_until`` (renewed
    while it runs) its process is taken as gone and a retry with the key runs again; ``holder``
    names that request, so it never completes or releases a claim taken over from it.
    """

    __tablename__ = "idempotency_keys"

    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    method: Mapped[str] = mapped_column(String(8))
    path: Mapped[str] = mapped_column(String(300))
    request_hash: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    response: Mapped[str | None] = mapped_column(Text, nullable=True)
    agent_id: Mapped[str | None] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), nullable=True, index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    lease_until: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    holder: Mapped[str | None] = mapped_column(String(32), nullable=True)
