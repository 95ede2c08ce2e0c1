"""One full-Bayes refit job, run wherever it is sent: a Dask worker (by default a local cluster of separate
processes, or the cluster ``MEMTRIAL_DASK_SCHEDULER`` names), or a thread of the API worker.

:func:`fit_job` needs only the database and the job's id: it reads the agent's contribution records up to
the job's ``through_seq`` (the records as of the moment it was queued) and the experiences' embeddings,
fits the NumPyro model, and stores every experience's posterior in the job's row. While it runs it
refreshes the job's heartbeat; if the process running it dies, the heartbeat stops and an API worker
submits the job again (:mod:`service.jobs`), at most ``MAX_ATTEMPTS`` times. An attempt only writes its
result while the job still carries its attempt number, so a late, superseded attempt changes nothing.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from typing import Any

import numpy as np
from sqlalchemy import select, update

__all__ = ["MAX_ATTEMPTS", "UNFINISHED", "fit_job", "fit_records"]

MAX_ATTEMPTS = 3
UNFINISHED = ("queued", "running")
_FIT_LOCK = threading.Lock()  # one NumPyro fit at a time per process: JAX compiles and runs on every core


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def fit_records(
    mode: str, records: list[Any], features: dict[str, np.ndarray], method: str
) -> tuple[str, dict[str, Any] | None, str | None]:
    """(status, posterior by experience, error) of a fit of ``records`` (decision, experience, contribution)."""
    from memtrial.values import refit_mode
    from memtrial.values.bayes import BayesLearner, use_compile_cache

    embeddings: dict[Any, Any] = dict(features)
    with _FIT_LOCK:
        use_compile_cache()  # a restarted server or another replica loads the NUTS kernels compiled before
        learner = BayesLearner(refit_mode(mode), features=embeddings, method=method).fit(records)
    if learner.stats_ is None or learner.samples_ is None:
        return "done", {}, None
    return "done", {str(e): learner.posterior(e)._asdict() for e in learner.stats_.experience_ids}, None


def fit_job(database_url: str, job_id: str, heartbeat: float = 5.0, where: str = "") -> str:
    """Run the job ``job_id``: read its records, fit, store the posterior; its final status.

    ``database_url`` is the service's; a worker whose environment sets ``MEMTRIAL_DATABASE_URL`` uses its
    own (so credentials need not travel with the task). ``where`` names the process in the job's row.
    """
    from service.db import make_engine, make_session_factory, transaction
    from service.models import Agent, Contribution, Experience, RefitJob

    engine = make_engine(os.environ.get("MEMTRIAL_DATABASE_URL") or database_url)
    sessions = make_session_factory(engine)
    stop = threading.Event()
    try:
        with transaction(sessions) as session:
            job = session.get(RefitJob, job_id)
            if job is None or job.status not in UNFINISHED:
                return "gone" if job is None else job.status
            agent = session.get(Agent, job.agent_id)
            if agent is None:
                return "gone"
            # the experiences that exist now: a deleted one is forgotten, its records with it (the features
            # below are the live experiences', and the fit pools what it is given)
            live = select(Experience.id).where(Experience.agent_id == agent.id)
            query = select(Contribution.decision_id, Contribution.experience_id, Contribution.contribution).where(
                Contribution.agent_id == agent.id, Contribution.experience_id.in_(live)
            )
            if job.through_seq is not None:
                query = query.where(Contribution.seq <= job.through_seq)
            records = [tuple(row) for row in session.execute(query.order_by(Contribution.seq))]
            features = {
                row.id: np.frombuffer(row.embedding, dtype=np.float32).astype(np.float64)
                for row in session.execute(
                    select(Experience.id, Experience.embedding).where(Experience.agent_id == agent.id)
                )
            }
            mode, method, attempt = str(agent.settings["learner"]), job.method, job.attempts
            job.status, job.heartbeat_at = "running", _now()
            if where:
                job.worker = where[:64]
        mine = (RefitJob.id == job_id, RefitJob.attempts == attempt, RefitJob.status.in_(UNFINISHED))

        def beat() -> None:
            while not stop.wait(heartbeat):
                try:
                    with transaction(sessions) as session:
                        session.execute(update(RefitJob).where(*mine).values(heartbeat_at=_now()))
                except Exception:  # a database hiccup must not end the fit; the next beat tries again
                    continue

        beating = threading.Thread(target=beat, name=f"refit-{job_id[:8]}-heartbeat", daemon=True)
        beating.start()
        try:
            status, result, error = fit_records(mode, records, features, method)
        except Exception as failure:  # the job reports any failure instead of dying silently
            status, result, error = "failed", None, f"the fit failed ({type(failure).__name__})"
        stop.set()
        beating.join()
        with transaction(sessions) as session:
            written = session.execute(
                update(RefitJob)
                .where(*mine)
                .values(status=status, result=result, error=error, finished_at=_now(), heartbeat_at=_now())
            )
            return status if (written.rowcount or 0) else "superseded"  # type: ignore[attr-defined]
    finally:
        stop.set()
        engine.dispose()
