"""Leases of server drafting: a request's key and planned decision, renewed while it runs, freed when it fails or dies.

A server-drafted decision spans three transactions (plan; draft with no lock
held; decide), so its request holds two things between them: its
``Idempotency-Key`` (in progress) and its decision (``planned``). Both carry a
lease of ``MEMTRIAL_IDEMPOTENCY_LEASE_SECONDS``:

- while the request runs, :class:`Renewal` extends both every third of the lease;
- a request that fails (the drafter, a lock wait, a conflicting write) calls
  :func:`abandon`: its key is released (a retry with it runs again) and its
  decision withdrawn with the reason (status ``failed``). Whatever the database
  refuses at that moment (its lock still held) is tried again in the background
  until the lease would have ended anyway;
- a request whose process died renews nothing: its key's lease ends (a retry
  with the key, on any replica, takes it over) and the heartbeat of every API
  worker withdraws the decisions whose lease ended (:func:`withdraw_expired`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING

from sqlalchemy import select, update

from service.db import transaction
from service.deps import Services
from service.idempotency import Idempotency, release, renew
from service.models import Agent, Decision, utcnow
from service.modes import DecisionStatus
from service.store import as_utc, load_agent, owned_row, save_engine

if TYPE_CHECKING:
    from service.drafting import Retries

__all__ = [
    "EXPIRED",
    "Renewal",
    "abandon",
    "abandon_while_stopping",
    "drafting_in_flight",
    "finish_abandons",
    "stopping_bound",
    "withdraw",
    "withdraw_expired",
]

logger = logging.getLogger("memtrial.service")
EXPIRED = "the server drafting it stopped before deciding (its process ended): its lease expired"
RETRY_SECONDS = 0.5


class Renewal:
    """``with Renewal(...)``: the request's key and decision are renewed meanwhile, every third of the lease,
    by a thread of their own (so a busy event loop, or a slow import, never lets a lease lapse)."""

    def __init__(self, services: Services, guard: Idempotency, decision_id: str) -> None:
        self.services, self.guard, self.decision_id = services, guard, decision_id
        self.lease = services.settings.idempotency_lease_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drafting-lease", daemon=True)

    def __enter__(self) -> Renewal:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()  # a renewal in flight ends on its own; the thread is not waited for

    def _run(self) -> None:
        while not self._stop.wait(self.lease / 3):
            try:
                self.renew_once()
            except Exception as failure:  # a missed renewal only shortens the lease; the next one may succeed
                logger.warning("drafting lease renewal failed", extra={"error_type": type(failure).__name__})

    def renew_once(self) -> None:
        with transaction(self.services.sessions) as session:
            renew(session, self.guard, self.lease)
            session.execute(
                update(Decision)
                .where(Decision.id == self.decision_id, Decision.status == DecisionStatus.PLANNED)
                .values(drafting_until=utcnow() + dt.timedelta(seconds=self.lease))
            )


def withdraw(
    services: Services,
    tenant_id: str,
    agent_id: str,
    decision_id: str,
    reason: str,
    *,
    expired_only: bool = False,
    retries: Retries | None = None,
) -> bool:
    """Withdraw a planned decision (status ``failed``, its reason kept, a ``withdrawal`` entry in the log);
    False when it was already decided or withdrawn (or, with ``expired_only``, its lease is still running).

    retries: the retries of malformed answers reserved for it from a draft budget; those not sent go back
    to the credit. A decision whose process died keeps its reservation spent (its calls may have been sent)."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=True)
        row = owned_row(session, Decision, agent, decision_id, "decision")
        if row.status != DecisionStatus.PLANNED:
            return False
        if expired_only and (row.drafting_until is None or as_utc(row.drafting_until) >= utcnow()):
            return False
        engine = services.engines.checkout(session, agent, {row.id: row})
        if retries is not None:
            engine.release_calls(decision_id, retries.used + retries.left, retries.used)
        engine.withdraw(decision_id, reason)
        row.drafting_until = None
        save_engine(session, agent, engine, services.engines, head_only=True)
        return True


def _withdrawn(
    services: Services, tenant_id: str, agent_id: str, decision_id: str, reason: str, retries: Retries | None
) -> None:
    withdraw(services, tenant_id, agent_id, decision_id, reason, retries=retries)


def _release(services: Services, guard: Idempotency) -> None:
    with transaction(services.sessions) as session:
        release(session, guard)


def abandon(
    services: Services,
    tenant_id: str,
    agent_id: str,
    decision_id: str,
    guard: Idempotency,
    reason: str,
    retries: Retries | None = None,
    *,
    here_until: float | None = None,
) -> None:
    """A failed server-drafting request lets go: its key released, its decision withdrawn with ``reason``
    (and the retries it reserved but did not send given back to its draft budget).

    Each step the database refuses now is retried until the lease would have ended: in the background, or,
    with ``here_until`` (a ``time.monotonic()`` deadline), in this thread until then (a stopping server)."""
    steps: list[Callable[[], None]] = [
        lambda: _release(services, guard),
        lambda: _withdrawn(services, tenant_id, agent_id, decision_id, reason, retries),
    ]
    left = _attempt(steps)
    if not left:
        return
    deadline = time.monotonic() + services.settings.idempotency_lease_seconds
    if here_until is not None:
        _keep_trying(left, min(deadline, here_until))
    else:
        threading.Thread(target=_keep_trying, args=(left, deadline), name="drafting-abandon", daemon=True).start()


class _Stopping:
    """The server-drafting requests running now, and the abandons of those the server stopped in the middle of,
    still running: a stopping server's shutdown waits for both (:func:`finish_abandons`)."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.running = 0
        self.abandons: set[threading.Thread] = set()


_STOPPING = _Stopping()


@contextlib.contextmanager
def drafting_in_flight() -> Iterator[None]:
    """Around a server-drafting request, from before its plan to after its last word: counted as running, so a
    stopping server waits for it to register its abandon (which happens an event-loop turn or more after the
    cancellation) before it waits for the abandons."""
    with _STOPPING.changed:
        _STOPPING.running += 1
    try:
        yield
    finally:
        with _STOPPING.changed:
            _STOPPING.running -= 1
            _STOPPING.changed.notify_all()


def stopping_bound(services: Services) -> float:
    """How long a stopping server gives its abandons: a pool checkout and two statements (release, withdraw)."""
    settings = services.settings
    return settings.db_pool_timeout + 2 * settings.db_statement_timeout


def abandon_while_stopping(
    services: Services,
    tenant_id: str,
    agent_id: str,
    reason: str,
    planned: Callable[[], tuple[str, Retries | None] | None],
    guard: Idempotency,
) -> None:
    """:func:`abandon` for a request the server cancelled as it stops, in a thread (the cancellation is not held
    up) that the shutdown waits for (:func:`finish_abandons`, before the database engine goes) and the
    interpreter too (not a daemon), retrying what the database refuses in that thread: the key is released and
    the decision withdrawn before the process ends, so a retry with the key on the restarted server runs at once
    instead of waiting out the lease. ``planned()`` gives the request's (decision id, retries) once its plan has
    committed (it waits for a plan still running in its thread), or None where the plan wrote nothing."""

    def run() -> None:
        try:
            until = time.monotonic() + stopping_bound(services)
            made = planned()
            if made is not None:
                decision_id, retries = made
                abandon(services, tenant_id, agent_id, decision_id, guard, reason, retries, here_until=until)
        finally:
            with _STOPPING.changed:
                _STOPPING.abandons.discard(thread)
                _STOPPING.changed.notify_all()

    thread = threading.Thread(target=run, name="drafting-abandon")
    with _STOPPING.changed:
        _STOPPING.abandons.add(thread)
    try:
        thread.start()
    except BaseException:  # no thread (the interpreter exiting): nothing for the shutdown to wait for
        with _STOPPING.changed:
            _STOPPING.abandons.discard(thread)
            _STOPPING.changed.notify_all()
        raise


def finish_abandons(timeout: float) -> bool:
    """Wait up to ``timeout`` seconds in all for the server-drafting requests still running to end (a cancelled
    one registers its abandon as it ends), then for the abandons; whether all have ended."""
    deadline = time.monotonic() + timeout
    with _STOPPING.changed:
        while _STOPPING.running or _STOPPING.abandons:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _STOPPING.changed.wait(left)
    return True


def _attempt(steps: list[Callable[[], None]]) -> list[Callable[[], None]]:
    """Run each step once; the steps that failed."""
    failed = []
    for step in steps:
        try:
            step()
        except Exception as failure:  # the database is busy or gone: the step is tried again
            logger.warning("releasing a failed drafting request failed", extra={"error_type": type(failure).__name__})
            failed.append(step)
    return failed


def _keep_trying(steps: list[Callable[[], None]], deadline: float) -> None:
    pause = threading.Event()
    while steps and time.monotonic() < deadline:
        pause.wait(RETRY_SECONDS)
        steps = _attempt(steps)


def withdraw_expired(services: Services) -> int:
    """Withdraw the server-drafted decisions whose request stopped renewing its lease; returns how many."""
    now = utcnow()
    with transaction(services.sessions) as session:
        found = session.execute(
            select(Decision.id, Agent.id, Agent.tenant_id)
            .join(Agent, Agent.id == Decision.agent_id)
            .where(Decision.status == DecisionStatus.PLANNED, Decision.drafting_until < now)
        ).all()
    return sum(
        withdraw(services, tenant_id, agent_id, decision_id, EXPIRED, expired_only=True)
        for decision_id, agent_id, tenant_id in found
    )
