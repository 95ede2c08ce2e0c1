"""Background full-Bayes refits: a bounded queue per worker, heartbeats, and no job left "running" forever.

A job goes ``queued`` -> ``running`` -> ``done`` or ``failed``. The worker that
holds a job (queued or running) refreshes its ``heartbeat_at`` every
``HEARTBEAT`` seconds; any worker, when it starts and then every heartbeat,
marks ``failed`` the queued or running jobs whose heartbeat is older than
``STALE`` seconds (their worker was killed or stopped). A worker holds at
most ``capacity`` jobs; beyond that a new job is refused (429). On a clean
shutdown the worker fails its own unfinished jobs at once, after any
database work its threads have in flight has finished, so no connection is
still out when the app disposes its engine.

The same heartbeat thread drops stored idempotent answers older than their
retention (``MEMTRIAL_IDEMPOTENCY_HOURS``) every few minutes.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import queue
import secrets
import socket
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, or_, update
from sqlalchemy.orm import Session, sessionmaker

from service.db import transaction
from service.models import IdempotencyRecord, RefitJob

__all__ = ["HEARTBEAT", "STALE", "RefitRunner"]

logger = logging.getLogger("memtrial.service")
HEARTBEAT = 5.0
STALE = 30.0
PURGE_EVERY = 60  # heartbeats
UNFINISHED = ("queued", "running")

Work = Callable[[], tuple[str, dict[str, Any] | None, str | None]]  # -> (status, result, error)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class RefitRunner:
    def __init__(self, sessions: sessionmaker[Session], capacity: int, idempotency_hours: float = 24.0) -> None:
        self.sessions = sessions
        self.capacity = capacity
        self.idempotency_hours = idempotency_hours
        self.worker = f"{socket.gethostname()[:30]}:{os.getpid()}:{secrets.token_hex(4)}"
        self._held: set[str] = set()
        self._reserved = 0
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[str, Work] | None] = queue.Queue()
        self._stop = threading.Event()
        self._writing = threading.Lock()  # held by a thread's database work; stop() waits on it
        self._threads: list[threading.Thread] = []

    # -- capacity ------------------------------------------------------------
    def reserve(self) -> bool:
        """Take a place for one more job (False when this worker holds ``capacity`` already)."""
        with self._lock:
            if len(self._held) + self._reserved >= self.capacity:
                return False
            self._reserved += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._reserved -= 1

    def submit(self, job_id: str, work: Work) -> None:
        """Queue a reserved job (its row exists, status queued, owned by this worker)."""
        with self._lock:
            self._reserved -= 1
            self._held.add(job_id)
        self._queue.put((job_id, work))

    # -- lifecycle -----------------------------------------------------------
    def start(self) -> None:
        self._stop.clear()
        self.reap()
        for target, name in ((self._work, "refit"), (self._beat, "refit-heartbeat")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        self._queue.put(None)
        with self._writing:  # the threads' database work in flight ends (bounded by the statement timeout)
            pass
        with self._lock:
            held = list(self._held)
        if held:
            self._finish_many(held, "interrupted: the server shut down before the job finished")
        for thread in self._threads:  # the heartbeat exits at once; a refit in a fit holds no connection
            thread.join(timeout=0.1)
        self._threads = [t for t in self._threads if t.is_alive()]

    def _while_running(self, work: Callable[..., object], *args: Any, **values: Any) -> bool:
        """Run one piece of database work unless the runner is stopping; False when it was skipped."""
        with self._writing:
            if self._stop.is_set():
                return False
            work(*args, **values)
            return True

    # -- threads -------------------------------------------------------------
    def _work(self) -> None:
        while not self._stop.is_set():
            item = self._queue.get()
            if item is None:
                return
            job_id, work = item
            if not self._while_running(self._set, job_id, status="running"):
                return
            try:
                status, result, error = work()
            except Exception as failure:  # the job reports any failure instead of dying silently
                logger.error("refit failed", exc_info=failure, extra={"error_type": type(failure).__name__})
                status, result, error = "failed", None, f"the fit failed ({type(failure).__name__})"
            finished = _now()
            if not self._while_running(
                self._set, job_id, status=status, result=result, error=error, finished_at=finished
            ):
                return  # shut down meanwhile: stop() fails the job
            with self._lock:
                self._held.discard(job_id)

    def _beat(self) -> None:
        beats = 0
        while not self._stop.wait(HEARTBEAT):
            with self._lock:
                held = list(self._held)
            try:
                if not self._while_running(self._beat_once, held, beats):
                    return
                beats += 1
            except Exception as failure:  # a database hiccup must not kill the heartbeat
                logger.warning("refit heartbeat failed", extra={"error_type": type(failure).__name__})

    def _beat_once(self, held: list[str], beats: int) -> None:
        if held:
            with transaction(self.sessions) as session:
                session.execute(
                    update(RefitJob)
                    .where(RefitJob.id.in_(held), RefitJob.status.in_(UNFINISHED))
                    .values(heartbeat_at=_now())
                )
        self.reap()
        if beats % PURGE_EVERY == 0:
            self.purge_idempotency()

    def purge_idempotency(self) -> int:
        """Drop stored idempotent answers past their retention; returns how many."""
        horizon = _now() - dt.timedelta(hours=self.idempotency_hours)
        with transaction(self.sessions) as session:
            result = session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.created_at < horizon))
            return int(result.rowcount or 0)  # type: ignore[attr-defined]

    def reap(self) -> int:
        """Mark failed the unfinished jobs whose worker stopped beating; returns how many."""
        stale = _now() - dt.timedelta(seconds=STALE)
        try:
            with transaction(self.sessions) as session:
                result = session.execute(
                    update(RefitJob)
                    .where(
                        RefitJob.status.in_(UNFINISHED),
                        or_(RefitJob.heartbeat_at.is_(None), RefitJob.heartbeat_at < stale),
                    )
                    .values(
                        status="failed", error="interrupted: the worker running the job stopped", finished_at=_now()
                    )
                )
                return int(result.rowcount or 0)  # type: ignore[attr-defined]
        except Exception as failure:
            logger.warning("refit reaper failed", extra={"error_type": type(failure).__name__})
            return 0

    def _set(self, job_id: str, **values: Any) -> None:
        with transaction(self.sessions) as session:
            job = session.get(RefitJob, job_id)
            if job is not None and job.status in UNFINISHED:
                for name, value in values.items():
                    setattr(job, name, value)
                job.heartbeat_at = _now()

    def _finish_many(self, job_ids: list[str], error: str) -> None:
        try:
            with transaction(self.sessions) as session:
                session.execute(
                    update(RefitJob)
                    .where(RefitJob.id.in_(job_ids), RefitJob.status.in_(UNFINISHED))
                    .values(status="failed", error=error, finished_at=_now())
                )
        except Exception as failure:
            logger.warning("could not fail the unfinished refits", extra={"error_type": type(failure).__name__})
