"""A refit survives the API worker that sent it: killed with its Dask processes mid-fit, the job is taken up
by the other replica's worker, run again on its engine and finishes ``done``."""

import datetime as dt
import signal

import numpy as np
import psutil
import pytest
from live_server import Server
from support import POSTGRES_URL, UNIVERSE, make_tenant, reset_postgres, wait_until

from service.client import MemtrialClient
from service.db import make_engine, make_session_factory, transaction
from service.migrations import upgrade
from service.models import RefitJob

pytestmark = pytest.mark.slow  # two live servers, Dask clusters and a NumPyro fit

START = dt.datetime(2021, 1, 29, 21, 0, tzinfo=dt.UTC)
RETURNS = {"SPY": [0.01, -0.004], "TLT": [-0.002, 0.003], "GLD": [0.0, 0.002], "BIL": [0.0001, 0.0001]}


def job_row(job_id):
    engine = make_engine(POSTGRES_URL)
    with transaction(make_session_factory(engine)) as session:
        job = session.get(RefitJob, job_id)
        row = {"status": job.status, "attempts": job.attempts, "worker": job.worker}
    engine.dispose()
    return row


def kill_tree(pid):
    process = psutil.Process(pid)
    for member in [*process.children(recursive=True), process]:
        try:
            member.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass


def test_a_refit_whose_api_worker_is_killed_finishes_through_the_other_replica():
    reset_postgres(POSTGRES_URL)
    upgrade(POSTGRES_URL)
    key = make_tenant(POSTGRES_URL, "failover")
    env = {"MEMTRIAL_REFIT_STALE_SECONDS": "6", "MEMTRIAL_REFIT_ENGINE": "dask"}
    doomed = Server(POSTGRES_URL, env=env)
    survivor = Server(POSTGRES_URL, env=env, migrate=False)
    try:
        with MemtrialClient(doomed.url, key) as client:
            agent = client.create_agent("fund", "balanced", UNIVERSE)
            lessons = ["Bonds rallied on cuts.", "Gold held up.", "Cash waited.", "Stocks ran."]
            client.add_experiences(agent.id, lessons)
            rng = np.random.default_rng(5)
            for t in range(6):
                when = START + dt.timedelta(days=30 * t)
                plan = client.create_decision(agent.id, when, when + dt.timedelta(days=7), "rates fell", horizon=2)
                drafts = []
                for subset in plan.subsets:  # each lesson moves its own amount from cash to bonds
                    tilt = sum(0.02 * (1 + lessons.index(text)) for text in subset.texts)
                    drafts.append({"SPY": 0.3, "TLT": 0.3 + tilt, "GLD": 0.1, "BIL": 0.3 - tilt})
                client.submit_drafts(agent.id, plan.decision_id, drafts)
                returns = {asset: list(rng.normal(0.0, 0.01, 2)) for asset in RETURNS}
                client.settle(agent.id, plan.decision_id, returns=returns)
            job = client.start_refit(agent.id, method="svi")
        wait_until(lambda: job_row(job.job_id)["status"] == "running", 120, "the refit running")
        assert job_row(job.job_id)["status"] == "running"  # on the doomed worker's Dask process
        kill_tree(doomed.process.pid)  # the API worker and its Dask processes, mid-fit
        doomed.process.wait(timeout=30)
        with MemtrialClient(survivor.url, key) as client:
            wait_until(lambda: client.get_refit(agent.id, job.job_id).status == "done", 240, "the refit done")
            finished = client.get_refit(agent.id, job.job_id)
            values = client.values(agent.id).values
    finally:
        survivor.stop()
        doomed.stop()
    assert finished.status == "done", finished.error
    assert set(finished.posterior) == set(values)
    row = job_row(job.job_id)
    assert row["attempts"] == 1 and f":{survivor.process.pid}:" in row["worker"]  # run again by the survivor
    assert all(values[e].interval == "full_bayes" for e in finished.posterior)
