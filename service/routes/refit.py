"""Full-Bayes refits: ``POST .../refit`` starts a background job; ``GET .../refit/{job}`` reports it.

The job reads the agent's contribution records and embeddings as of the
moment it was queued, fits the NumPyro model (NUTS by default, or SVI) in a
worker thread, and stores every experience's posterior (mean, sd, 90%
interval, P(v > 0)); the values endpoint then shows the latest interval.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np
from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict
from sqlalchemy import select

from service.db import transaction
from service.deps import Services, ServicesDep, TenantDep
from service.models import Contribution, RefitJob
from service.errors import ApiError
from service.store import as_utc, load_agent, return_engine

router = APIRouter(prefix="/v1/agents/{agent_id}/refit", tags=["refit"])
logger = logging.getLogger("memtrial.service")
_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="refit")
_LOCK = threading.Lock()


class RefitCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    method: Literal["nuts", "svi"] = "nuts"


class RefitPublic(BaseModel):
    job_id: str
    status: str
    method: str
    created_at: dt.datetime
    finished_at: dt.datetime | None
    error: str | None
    posterior: dict[str, dict[str, float]] | None


def _public(job: RefitJob) -> RefitPublic:
    return RefitPublic(
        job_id=job.id,
        status=job.status,
        method=job.method,
        created_at=as_utc(job.created_at),
        finished_at=None if job.finished_at is None else as_utc(job.finished_at),
        error=job.error,
        posterior=job.result,
    )


def _run(services: Services, job_id: str, mode: str, records: list[Any], features: dict[str, np.ndarray], method: str) -> None:
    status, result, error = "done", None, None
    try:
        from memtrial.bayes import BayesLearner

        with _LOCK:
            learner = BayesLearner(mode if mode != "auto" else "content", features=features, method=method).fit(records)
        if learner.stats_ is None or learner.samples_ is None:
            result = {}
        else:
            result = {str(e): learner.posterior(e)._asdict() for e in learner.stats_.experience_ids}
    except Exception as failure:  # the job reports any failure instead of dying silently
        logger.exception("refit failed")
        status, error = "failed", f"{type(failure).__name__}: {failure}"
    with transaction(services.sessions) as session:
        job = session.get(RefitJob, job_id)
        if job is not None:
            job.status, job.result, job.error, job.finished_at = status, result, error, dt.datetime.now(dt.UTC)


@router.post("", status_code=202)
def start_refit(agent_id: str, tenant_id: TenantDep, services: ServicesDep, body: RefitCreate | None = None) -> RefitPublic:
    method = (body or RefitCreate()).method
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        engine = services.engines.checkout(session, agent)
        records = [tuple(row) for row in session.execute(
            select(Contribution.decision_id, Contribution.experience_id, Contribution.contribution).where(Contribution.agent_id == agent.id).order_by(Contribution.seq)
        )]
        features = {str(e): x.embedding for e, x in engine.experiences.items() if x.embedding is not None}
        return_engine(session, agent, engine, services.engines)
        job = RefitJob(agent_id=agent.id, status="running", method=method, state_version=agent.state_version)
        session.add(job)
        session.flush()
        public = _public(job)
        mode = agent.settings["learner"]
    _POOL.submit(_run, services, public.job_id, mode, records, features, method)
    return public


@router.get("/{job_id}")
def get_refit(agent_id: str, job_id: str, tenant_id: TenantDep, services: ServicesDep) -> RefitPublic:
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        job = session.scalars(select(RefitJob).where(RefitJob.id == job_id, RefitJob.agent_id == agent.id)).first()
        if job is None:
            raise ApiError(404, "not_found", f"refit job {job_id!r} not found", "job_id")
        return _public(job)


def latest_posterior(session: Any, agent_id: str) -> dict[str, dict[str, float]]:
    """The posterior of the newest finished refit of an agent (empty when none)."""
    job = session.scalars(
        select(RefitJob).where(RefitJob.agent_id == agent_id, RefitJob.status == "done").order_by(RefitJob.finished_at.desc())
    ).first()
    return dict(job.result or {}) if job is not None else {}
