"""One unit of work on an agent: a transaction, the agent loaded (and locked), the idempotency key.

A write that carries an ``Idempotency-Key`` already answered raises
:class:`Replayed` with the stored answer; the service's error handlers send it
as it was (``Idempotent-Replayed: true``), so no use case repeats that test.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session

from service.db import transaction
from service.deps import Services
from service.errors import Replayed
from service.idempotency import Idempotency
from service.models import Agent
from service.store import load_agent

__all__ = ["Replayed", "agent_write", "check_replay"]


def check_replay(session: Session, guard: Idempotency) -> None:
    """Raise :class:`Replayed` when the guard's key already has an answer."""
    replayed = guard.replay(session)
    if replayed is not None:
        raise Replayed(replayed)


@contextmanager
def agent_write(
    services: Services,
    tenant_id: str,
    agent_id: str,
    guard: Idempotency,
    *,
    lock: bool = True,
    claim: bool = True,
    lease: float | None = None,
) -> Iterator[tuple[Session, Agent]]:
    """A transaction holding the tenant's agent (locked for the transaction when ``lock``), with the
    request's key replayed (:class:`Replayed`) or claimed (when ``claim``; leased for ``lease`` seconds
    when the request holds it beyond this transaction)."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=lock)
        check_replay(session, guard)
        if claim:
            guard.claim(session, agent.id, lease)
        yield session, agent
