"""Refit use cases: ``POST .../refit`` queues a full-Bayes background job; ``GET .../refit/{job}`` reports it.

The job reads the agent's contribution records and embeddings as of the
moment it was queued, fits the NumPyro model (NUTS by default, or SVI) in the
worker's refit thread, and stores every experience's posterior (mean, sd, 90%
interval, P(v > 0)); the values endpoint then shows the latest interval. A job
is ``queued``, ``running``, ``done`` or ``failed`` (see :mod:`service.jobs`);
a worker holds at most ``MEMTRIAL_REFIT_QUEUE_SIZE`` jobs, and answers 429
beyond that.
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from sqlalchemy import select

from service.api_types import RefitPublic
from service.db import transaction
from service.deps import Services
from service.errors import ApiError
from service.idempotency import Idempotency
from service.models import Contribution, RefitJob
from service.store import as_utc, load_agent, return_engine, valid_id
from service.usecases.unit import agent_write

_FIT_LOCK = threading.Lock()
QUEUE_FULL_RETRY_SECONDS = 30


class RefitCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    method: Literal["nuts", "svi"] = "nuts"


def _public(job: RefitJob) -> RefitPublic:
    return RefitPublic(
        job_id=job.id,
        status=job.status,  # type: ignore[arg-type]
        method=job.method,
        created_at=as_utc(job.created_at),
        finished_at=None if job.finished_at is None else as_utc(job.finished_at),
        error=job.error,
        posterior=job.result,
    )


def _fit(
    mode: str, records: list[Any], features: dict[str, np.ndarray], method: str
) -> tuple[str, dict[str, Any] | None, str | None]:
    from memtrial.bayes import BayesLearner

    embeddings: dict[Any, Any] = dict(features)
    with _FIT_LOCK:
        learner = BayesLearner(mode if mode != "auto" else "content", features=embeddings, method=method).fit(records)
    if learner.stats_ is None or learner.samples_ is None:
        return "done", {}, None
    return "done", {str(e): learner.posterior(e)._asdict() for e in learner.stats_.experience_ids}, None


def start(services: Services, tenant_id: str, agent_id: str, method: str, guard: Idempotency) -> RefitPublic:
    """Queue a full-Bayes refit of the agent's values (429 when this worker holds its maximum)."""
    runner = services.jobs
    assert runner is not None
    if not runner.reserve():
        raise ApiError(
            429,
            "queue_full",
            f"this server already holds {runner.capacity} refits; retry when one has finished",
            None,
            retry_after=QUEUE_FULL_RETRY_SECONDS,
        )
    submitted = False
    try:
        with agent_write(services, tenant_id, agent_id, guard, lock=False) as (session, agent):
            engine = services.engines.checkout(session, agent)
            records = [
                tuple(row)
                for row in session.execute(
                    select(Contribution.decision_id, Contribution.experience_id, Contribution.contribution)
                    .where(Contribution.agent_id == agent.id)
                    .order_by(Contribution.seq)
                )
            ]
            features = {str(e): x.embedding for e, x in engine.experiences.items() if x.embedding is not None}
            return_engine(session, agent, engine, services.engines)
            job = RefitJob(
                agent_id=agent.id,
                status="queued",
                method=method,
                state_version=agent.state_version,
                heartbeat_at=dt.datetime.now(dt.UTC),
                worker=runner.worker,
            )
            session.add(job)
            session.flush()
            public = _public(job)
            guard.complete(202, public)
            mode = str(agent.settings["learner"])
        runner.submit(public.job_id, lambda: _fit(mode, records, features, method))
        submitted = True
        return public
    finally:
        if not submitted:
            runner.release()


def job(services: Services, tenant_id: str, agent_id: str, job_id: str) -> RefitPublic:
    """A refit job of the agent, as it stands."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        found = (
            None
            if not valid_id(job_id)
            else session.scalars(select(RefitJob).where(RefitJob.id == job_id, RefitJob.agent_id == agent.id)).first()
        )
        if found is None:
            raise ApiError(404, "not_found", f"refit job {job_id!r} not found", "job_id")
        return _public(found)


def latest_posterior(session: Any, agent_id: str) -> dict[str, dict[str, float]]:
    """The posterior of the newest finished refit of an agent (empty when none)."""
    job = session.scalars(
        select(RefitJob)
        .where(RefitJob.agent_id == agent_id, RefitJob.status == "done")
        .order_by(RefitJob.finished_at.desc())
    ).first()
    return dict(job.result or {}) if job is not None else {}
