"""Background full-Bayes refits: sent to a distributed engine, their state in the database, resubmitted when
the process running them dies, and no job left "running" forever.

A job goes ``queued`` -> ``running`` -> ``done`` or ``failed``; its row holds everything needed to run it
(:func:`service.refits.fit_job`). The API worker that takes a request sends the job to its engine:

- ``dask`` (the default): a Dask cluster, the one ``MEMTRIAL_DASK_SCHEDULER`` names (``tcp://host:8786``)
  or a local cluster of separate worker processes this API worker starts on its first refit; the task
  is fire-and-forget, so it finishes even if the API worker that sent it goes away;
- ``threads``: a thread of the API worker (for development and tests).

The process running a job refreshes its ``heartbeat_at``, and the API worker that sent a job refreshes it
while its engine holds the job's run, waiting in its queue or running (the engine reports each run's end).
Every API worker, when it starts and then
every sixth of ``MEMTRIAL_REFIT_STALE_SECONDS``, looks for unfinished jobs whose heartbeat is older than
that, claims each (one worker wins, by the job's attempt number) and submits it again to its own engine,
up to :data:`service.refits.MAX_ATTEMPTS` runs; then the job is ``failed``. A worker holds at most
``capacity`` jobs it sent and has not seen finish; beyond that a new job is refused (429). On a clean
shutdown a worker whose jobs run on its own processes (threads, or its local cluster) releases them at
once (heartbeat cleared) for another worker, or its successor, to take up; jobs on a shared cluster go on.

The same heartbeat thread drops stored idempotent answers older than their retention
(``MEMTRIAL_IDEMPOTENCY_HOURS``) every few minutes, and runs the service's other upkeep (``chores``,
such as withdrawing the server-drafted decisions whose request died, :mod:`service.leases`) every beat.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import queue
import secrets
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.db import transaction
from service.models import IdempotencyRecord, RefitJob
from service.refits import MAX_ATTEMPTS, UNFINISHED, fit_job

__all__ = ["STALE", "DaskEngine", "RefitRunner", "ThreadEngine"]

logger = logging.getLogger("memtrial.service")
STALE = 30.0
PURGE_EVERY = 60  # heartbeats

Done = Callable[[str, "str | None"], None]  # (job id, why its run raised before it could say so itself, or None)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _raised(failure: BaseException | None) -> str:
    """What a job's run raised, for its row: the exception's type only (its message may hold the database's
    address or a statement: the log of the process that ran it has it, the tenant's answer does not)."""
    return type(failure).__name__


def sendable_url(database_url: str) -> str:
    """The database URL a job is sent with: a relative SQLite path made absolute (a worker started in another
    folder would otherwise open, and create, a database of its own there)."""
    from sqlalchemy.engine import make_url

    from service.settings import sqlite_file

    url, path = make_url(database_url), sqlite_file(database_url)
    if path is None or path == url.database:
        return database_url
    return url.set(database=path).render_as_string(hide_password=False)


class ThreadEngine:
    """Runs jobs one at a time on a thread of this process."""

    local = True

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[str, str, float, str, Done] | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def ready(self) -> str | None:
        """Why no job can be sent now: never (the thread is this process's own)."""
        return None

    def submit(self, database_url: str, job_id: str, heartbeat: float, where: str, done: Done) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="refit", daemon=True)
            self._thread.start()
        self._queue.put((database_url, job_id, heartbeat, where, done))

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            database_url, job_id, heartbeat, where, done = item
            why = None
            try:
                fit_job(database_url, job_id, heartbeat, where)
            except Exception as failure:  # the job could not say so itself (its database unread): the runner will
                logger.error("refit failed", exc_info=failure, extra={"error_type": type(failure).__name__})
                why = _raised(failure)
            finally:
                done(job_id, why)

    def close(self) -> None:
        self._queue.put(None)


class DaskEngine:
    """Sends jobs to a Dask cluster: ``scheduler`` (an address), or a local cluster of worker processes
    started on the first job (one worker process, one thread: a NumPyro fit uses every core)."""

    RETRY_AFTER = 30.0  # seconds a failed connection is remembered

    def __init__(self, scheduler: str | None) -> None:
        self.scheduler = scheduler
        self.local = scheduler is None
        self._client: Any = None
        self._cluster: Any = None
        self._lock = threading.Lock()
        self._unreachable: tuple[float, str] | None = None  # (until when, why) after a failed connection

    def client(self) -> Any:
        with self._lock:
            if self._client is not None and self._client.status in ("closing", "closed"):
                # a client that gave up on its scheduler (gone longer than the client waits to reconnect) stays
                # closed: every job sent through it failed to send, and the cluster read as ready; a new one
                self._discard()
            if self._client is None:
                from memtrial.errors import import_extra

                distributed = import_extra("distributed", "service", "refits on Dask")
                from service.logs import adopt_library_logger

                adopt_library_logger("distributed", "tornado", "bokeh")  # their own plain-text loggers, from INFO
                if self.scheduler is None:
                    self._cluster = distributed.LocalCluster(
                        n_workers=1,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=None,
                        # the scheduler serves its health routes even without a dashboard, on 8787 unless told:
                        # a free loopback port, so two services (or two test workers) never contend for one
                        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                        silence_logs=logging.ERROR,
                    )
                    self._client = distributed.Client(self._cluster, set_as_default=False)
                else:
                    self._client = distributed.Client(self.scheduler, set_as_default=False, timeout=10)
            return self._client

    def ready(self) -> str | None:
        """Why no job can be sent now (the scheduler named cannot be reached), or None. A failed connection
        (which takes the client's 10-second timeout) is remembered for ``RETRY_AFTER`` seconds, so requests
        in the meantime are answered at once."""
        if self._unreachable is not None and time.monotonic() < self._unreachable[0]:
            return self._unreachable[1]
        try:
            self.client()
        except (OSError, TimeoutError) as error:
            where = "the local cluster" if self.scheduler is None else f"the Dask scheduler at {self.scheduler}"
            why = f"{where} cannot be reached ({type(error).__name__}: {error})"[:500]
            self._unreachable = (time.monotonic() + self.RETRY_AFTER, why)
            return why
        self._unreachable = None
        return None

    def submit(self, database_url: str, job_id: str, heartbeat: float, where: str, done: Done) -> None:
        import distributed

        client = self.client()
        future = client.submit(
            fit_job, database_url, job_id, heartbeat, where, pure=False, key=f"refit-{job_id}-{secrets.token_hex(4)}"
        )

        def finished(ended: Any) -> None:  # always reports the job finished, whatever reading its end raises
            why = None
            try:
                if ended.status == "error":
                    why = _raised(ended.exception())
            except Exception as failure:
                why = _raised(failure)
            done(job_id, why)

        future.add_done_callback(finished)
        distributed.fire_and_forget(future)  # type: ignore[no-untyped-call]  # runs to its end even if this process goes

    def close(self) -> None:
        with self._lock:
            self._discard()

    def _discard(self) -> None:
        """Close the client and the local cluster, if any (under ``_lock``); the next job starts new ones."""
        client, cluster, self._client, self._cluster = self._client, self._cluster, None, None
        for closing in (client, cluster):
            if closing is not None:
                try:
                    closing.close()
                except Exception as failure:  # shutting down: report, never hang the server's exit
                    logger.warning("closing the refit cluster failed", extra={"error_type": type(failure).__name__})


class RefitRunner:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        capacity: int,
        idempotency_hours: float = 24.0,
        *,
        database_url: str = "",
        engine: str = "threads",
        scheduler: str | None = None,
        stale: float = STALE,
    ) -> None:
        self.sessions = sessions
        self.capacity = capacity
        self.idempotency_hours = idempotency_hours
        self.database_url = sendable_url(
            database_url or str(sessions.kw["bind"].url.render_as_string(hide_password=False))
        )
        self._failed: dict[tuple[str, int], str] = {}  # runs that raised before writing their job: what, by run
        self.stale = stale
        self.heartbeat = max(0.05, stale / 6)
        self.engine: ThreadEngine | DaskEngine = DaskEngine(scheduler) if engine == "dask" else ThreadEngine()
        self.worker = f"{socket.gethostname()[:30]}:{os.getpid()}:{secrets.token_hex(4)}"
        # each held job: the attempt numbers of its runs sent and not yet seen finish (a job taken up again while
        # its former run still runs has two), and when each was sent (for its DEBUG record)
        self._held: dict[str, dict[int, float]] = {}
        self._reserved = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._writing = threading.Lock()  # held by the heartbeat's database work; stop() waits on it
        self._threads: list[threading.Thread] = []
        self.chores: list[Callable[[], object]] = []  # other upkeep, run every beat

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

    def submit(self, job_id: str) -> None:
        """Send a reserved job (its row exists, status queued, owned by this worker) to the engine."""
        with self._lock:
            self._reserved -= 1
        self._send(job_id, 0)

    def ready(self) -> str | None:
        """Why no job can be sent now (a Dask scheduler that cannot be reached), or None."""
        return self.engine.ready()

    def _send(self, job_id: str, attempt: int) -> None:
        """Send a held job (its run number ``attempt``) to the engine; one that cannot be sent (its scheduler gone,
        its client closed) fails, saying why. Never raises: a reserved place is never given back twice."""
        with self._lock:
            self._held.setdefault(job_id, {})[attempt] = time.perf_counter()
        runs_on = "a thread" if isinstance(self.engine, ThreadEngine) else "the refit cluster"
        logger.debug("refit job sent", extra={"job_id": job_id, "runs_on": runs_on})

        def finished(job: str, why: str | None = None) -> None:  # this run's end, with its own attempt number
            self._finished(job, why, attempt)

        try:
            self.engine.submit(self.database_url, job_id, self.heartbeat, self.worker, finished)
        except Exception as error:  # a scheduler gone, a client closed: the run never started
            why = f"could not be sent to the refit cluster ({type(error).__name__}: {error})"[:500]
            logger.error("refit not sent", extra={"error_type": type(error).__name__})
            self._finished(job_id, None, attempt)
            try:
                with transaction(self.sessions) as session:
                    session.execute(
                        update(RefitJob)
                        .where(RefitJob.id == job_id, RefitJob.attempts == attempt, RefitJob.status.in_(UNFINISHED))
                        .values(status="failed", error=why, finished_at=_now())
                    )
            except Exception as failure:  # the reaper fails it once its heartbeat is stale
                logger.warning("could not record an unsent refit", extra={"error_type": type(failure).__name__})

    def _finished(self, job_id: str, why: str | None, attempt: int) -> None:
        """One run of the job ended (``why``: what it raised before it could say so itself)."""
        with self._lock:
            runs = self._held.get(job_id, {})
            sent = runs.pop(attempt, None)
            if not runs:  # no other run of the job is pending here
                self._held.pop(job_id, None)
            if why is not None:  # written by the next heartbeat (this may be Dask's event loop)
                self._failed[(job_id, attempt)] = why
        if why is not None:
            logger.error("refit run raised before the fit", extra={"job_id": job_id, "error_type": why})
        if sent is not None:
            elapsed = round(1000 * (time.perf_counter() - sent), 2)
            logger.debug("refit job finished", extra={"job_id": job_id, "ms": elapsed})

    # -- lifecycle -----------------------------------------------------------
    def start(self) -> None:
        self._stop.clear()
        self.reap()
        thread = threading.Thread(target=self._beat, name="refit-heartbeat", daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        with self._writing:  # the heartbeat's database work in flight ends (bounded by the statement timeout)
            pass
        with self._lock:
            held = list(self._held)
        if held and self.engine.local:  # they ran on this process's own threads or cluster: hand them on
            self._release(held)
        self.engine.close()
        for thread in self._threads:  # the heartbeat exits at once
            thread.join(timeout=0.1)
        self._threads = [t for t in self._threads if t.is_alive()]

    def _while_running(self, work: Callable[..., object], *args: Any, **values: Any) -> bool:
        """Run one piece of database work unless the runner is stopping; False when it was skipped."""
        with self._writing:
            if self._stop.is_set():
                return False
            work(*args, **values)
            return True

    # -- the heartbeat thread --------------------------------------------------
    def _beat(self) -> None:
        beats = 0
        while not self._stop.wait(self.heartbeat):
            try:
                if not self._while_running(self._beat_once, beats):
                    return
                beats += 1
            except Exception as failure:  # a database hiccup must not kill the heartbeat
                logger.warning("refit heartbeat failed", extra={"error_type": type(failure).__name__})

    def _beat_once(self, beats: int) -> None:
        self.record_failures()
        self.stamp_waiting()
        self.reap()
        if beats % PURGE_EVERY == 0:
            self.purge_idempotency()
        for chore in self.chores:
            try:
                chore()
            except Exception as failure:  # one chore's failure neither stops the others nor the heartbeat
                logger.warning("upkeep failed", extra={"error_type": type(failure).__name__})

    def purge_idempotency(self) -> int:
        """Drop stored idempotent answers past their retention; returns how many."""
        horizon = _now() - dt.timedelta(hours=self.idempotency_hours)
        with transaction(self.sessions) as session:
            result = session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.created_at < horizon))
            return int(result.rowcount or 0)  # type: ignore[attr-defined]

    def record_failures(self) -> None:
        """The runs that raised before they could write their job (a worker that cannot read the database, an
        import that failed there, a database that refused for a moment) count as runs: the job is run again at
        once, by whichever worker takes it, and after its last run fails saying what that run raised, instead of
        waiting out three stale periods to read 'interrupted'. A run superseded meanwhile changes nothing."""
        with self._lock:
            failed, self._failed = self._failed, {}
        for (job_id, attempt), why in failed.items():
            mine = (RefitJob.id == job_id, RefitJob.attempts == attempt, RefitJob.status.in_(UNFINISHED))
            if attempt + 1 >= MAX_ATTEMPTS:
                error = (
                    f"the refit worker could not run the job: {attempt + 1} runs raised {why} before the fit "
                    "(the worker's log has its message)"
                )
                values: dict[str, Any] = {"status": "failed", "error": error, "finished_at": _now()}
            else:
                values = {"heartbeat_at": None, "status": "queued"}  # stale at once: taken up as the next run
            with transaction(self.sessions) as session:
                session.execute(update(RefitJob).where(*mine).values(**values))

    def stamp_waiting(self) -> None:
        """Refresh the heartbeat of the jobs this worker sent whose run its engine still holds, waiting in its
        queue (behind another fit, or for a worker of its cluster) or running: they are alive while this worker
        is, and the engine tells this worker when a run ends (a cluster whose worker process dies runs the task
        again or reports it failed). A running job's own process refreshes it too, which is what keeps a job
        on a shared cluster alive once the worker that sent it is gone. Without this a job that waited longer
        than the stale time was taken for one whose process had died, sent again, and failed after its
        attempts; and a run whose own heartbeats stopped reaching the database for the stale time (its process
        starved of CPU, or its writes refused) was sent again while it ran, each run superseding the last."""
        with self._lock:
            # a job by the attempt of a run still held: a run that failed (its job made stale at once to be taken
            # up) is not kept alive by an older run of the job that is still pending
            waiting = [(job_id, attempt) for job_id, runs in self._held.items() for attempt in runs]
        if waiting:
            alive = or_(*(and_(RefitJob.id == job_id, RefitJob.attempts == attempt) for job_id, attempt in waiting))
            with transaction(self.sessions) as session:
                session.execute(
                    update(RefitJob)
                    .where(alive, RefitJob.status.in_(UNFINISHED), RefitJob.worker == self.worker)
                    .values(heartbeat_at=_now())
                )

    def reap(self) -> int:
        """Take up the unfinished jobs whose process stopped beating: submit each again to this worker's
        engine (a claim by attempt number, so one worker wins), or fail it after its last attempt.
        Returns how many were submitted again or failed."""
        stale = _now() - dt.timedelta(seconds=self.stale)
        taken = 0
        try:
            with transaction(self.sessions) as session:
                found = session.execute(
                    select(RefitJob.id, RefitJob.attempts).where(
                        RefitJob.status.in_(UNFINISHED),
                        or_(RefitJob.heartbeat_at.is_(None), RefitJob.heartbeat_at < stale),
                    )
                ).all()
            for job_id, attempts in found:
                claim = (RefitJob.id == job_id, RefitJob.attempts == attempts, RefitJob.status.in_(UNFINISHED))
                with transaction(self.sessions) as session:
                    if attempts + 1 >= MAX_ATTEMPTS:
                        error = f"interrupted: the workers running the job stopped {attempts + 1} times"
                        session.execute(
                            update(RefitJob)
                            .where(*claim)
                            .values(status="failed", error=error, finished_at=_now(), attempts=attempts + 1)
                        )
                        taken += 1
                        continue
                    won = session.execute(
                        update(RefitJob)
                        .where(*claim)
                        .values(status="queued", attempts=attempts + 1, heartbeat_at=_now(), worker=self.worker)
                    )
                if (won.rowcount or 0) == 1:  # type: ignore[attr-defined]
                    logger.warning(
                        "refit taken up again",
                        extra={"job_id": job_id, "attempt": attempts + 1, "stale_seconds": self.stale},
                    )
                    self._send(job_id, attempts + 1)
                    taken += 1
        except Exception as failure:
            logger.warning("refit reaper failed", extra={"error_type": type(failure).__name__})
        return taken

    def _release(self, job_ids: list[str]) -> None:
        """Hand unfinished jobs on: a cleared heartbeat is stale at once for every worker's reaper."""
        try:
            with transaction(self.sessions) as session:
                session.execute(  # not a job another worker has taken up since
                    update(RefitJob)
                    .where(RefitJob.id.in_(job_ids), RefitJob.status.in_(UNFINISHED), RefitJob.worker == self.worker)
                    .values(heartbeat_at=None, status="queued")
                )
        except Exception as failure:
            logger.warning("could not release the unfinished refits", extra={"error_type": type(failure).__name__})
