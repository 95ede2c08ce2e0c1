"""Service: the robust estimator (``robust=True``) sets an extreme settlement aside; without it one outlier flattens every value."""

import datetime as dt

import numpy as np

START = dt.datetime(2021, 3, 1, 21, 0, tzinfo=dt.UTC)


LESSONS = [
    "Bonds rallied on a rate cut.",
    "Equities fell on inflation.",
    "Gold held in a banking scare.",
    "Cash protected the book.",
    "Momentum paid in a calm year.",
]


def _scored_agent(client, name="grader", robust=True):
    return client.create_agent(
        name, kind="scored", outcomes=["yes", "no", "maybe"], gate={"test": "anytime", "alpha": 0.05}, robust=robust
    )


def _spearman(first, second):
    a, b = np.argsort(np.argsort(first)), np.argsort(np.argsort(second))
    return float(np.corrcoef(a, b)[0, 1])


def _settle_scored_world(client, agent_id, outlier_at=None, factor=1e6, n=50, seed=0):
    """Planted values: a draft scores higher the more helpful lessons its subset holds (plus noise)."""
    rng = np.random.default_rng(seed)
    texts = [e["text"] for e in client.list_experiences(agent_id, limit=100)["items"]]
    worth = {text: (len(texts) - i) * 0.02 for i, text in enumerate(texts)}  # the first lesson helps most
    for t in range(n):
        when = START + dt.timedelta(days=t)
        plan = client.create_decision(agent_id, when, when + dt.timedelta(hours=1), texts[t % len(texts)])
        client.submit_drafts(
            agent_id, plan["decision_id"], [{"yes": 0.4, "no": 0.4, "maybe": 0.2}] * len(plan["subsets"])
        )
        utilities = np.array([sum(worth[x] for x in s["texts"]) for s in plan["subsets"]]) + rng.normal(
            0, 0.05, len(plan["subsets"])
        )
        if t == outlier_at:
            utilities = utilities * factor
        client.settle(agent_id, plan["decision_id"], utilities=utilities.tolist())
    values = client.values(agent_id)["values"]
    return {e["text"]: values[e["id"]] for e in client.list_experiences(agent_id, limit=100)["items"]}


def test_one_extreme_settlement_among_fifty_leaves_the_ranking_as_ordinary_noise_leaves_it(client):
    """The outlier first and mid-run, each against the same two ordinary worlds (computed once)."""
    lessons = [f"lesson {i}: {t}" for i, t in enumerate(LESSONS * 2)][:8]
    runs = {}
    for name, outlier, seed in (("ordinary", None, 0), ("noise", None, 1), ("outlier-0", 0, 0), ("outlier-25", 25, 0)):
        agent = _scored_agent(client, name)
        client.add_experiences(agent["id"], [{"text": t} for t in lessons])
        runs[name] = _settle_scored_world(client, agent["id"], outlier, seed=seed)
    order = sorted(lessons)
    mean = {name: [runs[name][t]["mean"] for t in order] for name in runs}
    noise_agreement = _spearman(mean["ordinary"], mean["noise"])
    for name in ("outlier-0", "outlier-25"):
        assert _spearman(mean["ordinary"], mean[name]) >= min(noise_agreement, 0.9) - 0.05, name
        for value in runs[name].values():  # never mean 0 sd 0 for a learnt experience
            assert value["n"] >= 2 and value["sd"] is not None and value["sd"] > 0, name


def test_without_the_guard_one_outlier_flattens_every_value(client):
    lessons = [f"lesson {i}" for i in range(6)]
    plain, robust = _scored_agent(client, "plain", robust=False), _scored_agent(client, "robust")
    for agent in (plain, robust):
        client.add_experiences(agent["id"], [{"text": t} for t in lessons])
    outlier = _settle_scored_world(client, plain["id"], 10, n=30)
    kept = _settle_scored_world(client, robust["id"], 10, n=30)
    spread = lambda values: np.ptp([v["mean"] for v in values.values()])  # noqa: E731
    # the plain estimator collapses (the outlier's noise shrinks every value to 0); the guard sets the outlier aside
    assert spread(kept) > 0.01 and spread(outlier) < 0.01 * spread(kept)
