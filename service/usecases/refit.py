"""Refit use cases: ``POST .../refit`` queues a full-Bayes background job; ``GET .../refit/{job}`` reports it.

The job fits the agent's contribution records as of the moment it was queued
(``through_seq``) and the experiences' embeddings with the NumPyro model (NUTS
by default, or SVI) on the refit engine (a Dask cluster by default, see
:mod:`service.jobs` and :mod:`service.refits`), and stores every experience's
posterior (mean, sd, 90% interval, P(v > 0)); the values endpoint then shows
the latest interval. A job is ``queued``, ``running``, ``done`` or ``failed``;
a worker holds at most ``MEMTRIAL_REFIT_QUEUE_SIZE`` jobs it sent, and answers
429 beyond that.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import func, select

from service.api_types import RefitPublic
from service.db import transaction
from service.deps import Services
from service.errors import ApiError
from service.idempotency import Idempotency
from service.models import Contribution, RefitJob
from service.store import as_utc, load_agent, shown_id, valid_id
from service.usecases.unit import agent_write, check_replay

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


def start(services: Services, tenant_id: str, agent_id: str, method: str, guard: Idempotency) -> RefitPublic:
    """Queue a full-Bayes refit of the agent's values (429 when this worker holds its maximum)."""
    runner = services.jobs
    assert runner is not None
    if guard.key is not None:  # a retry of a queued refit gets its first answer whatever the queue holds now
        with transaction(services.sessions) as session:
            load_agent(session, tenant_id, agent_id, lock=False)
            check_replay(session, guard)
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
        # connecting to a Dask scheduler takes up to its 10-second timeout: done before the write transaction, which
        # on SQLite holds the whole database's write lock; the check inside reads what this one found (a failure is
        # remembered, a client kept), so a replay of the key is still answered there whatever the cluster does
        runner.ready()
        with agent_write(services, tenant_id, agent_id, guard, lock=False) as (session, agent):
            unreachable = runner.ready()  # a replay of the key answered above; nothing is written from here
            if unreachable is not None:
                raise ApiError(
                    503,
                    "refit_unavailable",
                    f"refits cannot run now: {unreachable} (MEMTRIAL_DASK_SCHEDULER); nothing was queued",
                    None,
                    retry_after=QUEUE_FULL_RETRY_SECONDS,
                )
            through = session.scalar(select(func.max(Contribution.seq)).where(Contribution.agent_id == agent.id))
            job = RefitJob(
                agent_id=agent.id,
                status="queued",
                method=method,
                state_version=agent.state_version,
                heartbeat_at=dt.datetime.now(dt.UTC),
                worker=runner.worker,
                attempts=0,
                through_seq=0 if through is None else int(through),
            )
            session.add(job)
            session.flush()
            public = _public(job)
            guard.complete(202, public)
        runner.submit(public.job_id)  # after the commit: the job's row is what the engine reads
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
            raise ApiError(404, "not_found", f"refit job {shown_id(job_id)} not found", "job_id")
        return _public(found)


def latest_posterior(session: Any, agent_id: str, live: Collection[str]) -> dict[str, dict[str, float]]:
    """The posterior of the agent's newest finished refit while it still fits the agent's data, else empty.

    Newest is the refit of the most records (then the latest submitted), not the last to finish: an older fit
    finishing late does not replace a newer one. Its data are still the agent's while no contribution was added
    since it read them (a settlement, or a correction, which rewrites its decision's) and every experience it
    valued still exists (``live``: a deleted one is forgotten); else the values keep their empirical intervals,
    and a mean learnt since never sits beside an interval of the past."""
    job = session.scalars(
        select(RefitJob)
        # a refit from before jobs recorded what they read cannot be checked: never shown
        .where(RefitJob.agent_id == agent_id, RefitJob.status == "done", RefitJob.through_seq.is_not(None))
        .order_by(RefitJob.through_seq.desc(), RefitJob.created_at.desc(), RefitJob.id.desc())
    ).first()
    if job is None or job.through_seq is None:
        return {}
    newer = session.scalar(
        select(Contribution.seq).where(Contribution.agent_id == agent_id, Contribution.seq > job.through_seq).limit(1)
    )
    posterior = dict(job.result or {})
    if newer is not None or not set(posterior) <= set(live):
        return {}
    return posterior
