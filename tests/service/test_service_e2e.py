"""End to end: a planted world driven through a real uvicorn server with the client.

The service's decisions must equal the library engine's on the same inputs,
through a server restart and across two worker processes.
"""

import datetime as dt

import numpy as np
import pytest
from live_server import Server
from support import UNIVERSE, make_tenant
from world import TYPES, World

from memtrial.engine.lifecycle import EngineConfig, MemTrial
from memtrial.outcomes.display import name_experiences
from memtrial.outcomes.mandates import INVESTORS
from service.client import MemtrialClient
from service.embeddings import get_embedder
from service.migrations import upgrade
from service.views import plan_labels

pytestmark = pytest.mark.slow  # live servers through a restart: the slow tier

ASSETS = [a["asset"] for a in UNIVERSE]
START = dt.datetime(2015, 1, 30, 21, 0, tzinfo=dt.UTC)
TEXTS = {
    e: f"Lesson {e}: when the market regime turned, the book {'gained' if k > 0 else 'lost' if k < 0 else 'was flat'} on class {i % 4}."
    for i, (e, k) in enumerate(TYPES.items())
}


def returns_of(rel: np.ndarray) -> np.ndarray:
    previous = np.vstack([np.ones((1, rel.shape[1])), rel[:-1]])
    return rel / previous - 1.0


@pytest.fixture
def sqlite_url(tmp_path):
    url = f"sqlite:///{tmp_path / 'e2e.db'}"
    upgrade(url)
    return url


def test_service_decisions_equal_the_library_engine_through_a_restart(sqlite_url):
    key = make_tenant(sqlite_url, "e2e")
    world = World(seed=8, n_dates=26)
    universe = {"risky": np.array([True, False, False, False]), "defensive": np.array([False, True, False, True])}
    library = MemTrial(EngineConfig(investor=INVESTORS["balanced"]))
    service_ids: dict[str, str] = {}
    world_ids: dict[str, str] = {}
    pending: list[tuple[str, dt.datetime, np.ndarray]] = []
    server = Server(sqlite_url, workers=1)
    client = MemtrialClient(server.url, key)
    try:
        agent = client.create_agent("e2e", "balanced", UNIVERSE)
        added = client.add_experiences(agent["id"], [{"text": TEXTS[e]} for e in TYPES])["items"]
        vectors = get_embedder().encode([TEXTS[e] for e in TYPES])
        for world_id, item, vector in zip(TYPES, added, vectors, strict=True):
            service_ids[world_id], world_ids[item["id"]] = item["id"], world_id
            library.add_experience(item["id"], vector)
        for t in range(world.n_dates):
            if t == 13:  # restart, then continue on two workers
                client.close()
                server.stop()
                server = Server(sqlite_url, workers=2)
                client = MemtrialClient(server.url, key)
            time_t = START + dt.timedelta(days=30 * t)
            for decision_id, maturity, returns in [p for p in pending if p[1] <= time_t]:
                served = client.settle(
                    agent["id"],
                    decision_id,
                    returns=dict(zip(ASSETS, returns.T.tolist(), strict=True)),
                    settled_at=maturity,
                )
                local = library.settle(decision_id, np.cumprod(1.0 + returns, axis=0), at=maturity)
                assert served["contributions"] == {str(e): c for e, c in local.contributions.items()}
                pending.remove((decision_id, maturity, returns))
            maturity = time_t + dt.timedelta(days=45)
            plan = client.create_decision(
                agent["id"], time_t, maturity, f"Month {t}: regime {'up' if t % 3 else 'down'}"
            )
            retrieved = [r["id"] for r in plan["retrieved"]]
            local_plan = library.plan(
                plan["decision_id"], time_t, maturity, retrieved=retrieved, n_assets=4, **universe
            )
            assert plan["predictions"] == {str(e): v for e, v in local_plan.predictions.items()}
            drafts = world.drafts(t, [tuple(world_ids[e] for e in s["experience_ids"]) for s in plan["subsets"]])
            decision = client.submit_drafts(
                agent["id"], plan["decision_id"], [dict(zip(ASSETS, d.tolist(), strict=True)) for d in drafts]
            )
            local_decision = library.decide(plan["decision_id"], drafts)
            assert decision["weights"] == dict(zip(ASSETS, local_decision.weights.tolist(), strict=True))
            assert decision["explanation"] == name_experiences(
                local_decision.explanation, plan_labels(plan.model_dump())
            )
            pending.append((plan["decision_id"], maturity, returns_of(world.rel[t])))
        values = client.values(agent["id"])["values"]
        assert {world_ids[e]: v["mean"] for e, v in values.items()} == {
            world_ids[str(e)]: v for e, v in library.values().items()
        }
        assert client.verify(agent["id"])["ok"]
        searches = {
            tuple(h["id"] for h in client.search_experiences(agent["id"], TEXTS["e00"], k=1)["hits"]) for _ in range(12)
        }
        assert searches == {(service_ids["e00"],)}
    finally:
        client.close()
        server.stop()
