"""Service retrieval: an index kept up to date by additions, retired rows filtered, approximate search when large."""

from service.retrieval import IndexCache

TOPICS = [
    "bond yields fell",
    "equities rallied on earnings",
    "gold rose in a banking scare",
    "cash was safest",
    "oil spiked on supply cuts",
    "the dollar weakened",
]


def test_additions_extend_the_index_without_a_rebuild(app, client, agent):
    client.add_experiences(agent["id"], [{"text": t} for t in TOPICS[:3]])
    cache = app.state.services.indexes
    assert [h["text"] for h in client.search_experiences(agent["id"], "gold in a crisis", k=1)["hits"]] == [TOPICS[2]]
    before = cache.budget.peek("index", agent["id"])
    client.add_experiences(agent["id"], [{"text": t} for t in TOPICS[3:]])
    assert [h["text"] for h in client.search_experiences(agent["id"], "oil supply shock", k=1)["hits"]] == [TOPICS[4]]
    after = cache.budget.peek("index", agent["id"])
    assert after is before and after.size == 6


def test_retired_and_deleted_experiences_are_never_returned(client, agent):
    added = client.add_experiences(agent["id"], [{"text": t} for t in TOPICS])["items"]
    client.retire_experience(agent["id"], added[2]["id"])
    client.delete_experience(agent["id"], added[4]["id"])
    hits = client.search_experiences(agent["id"], "gold and oil", k=6)["hits"]
    assert {h["id"] for h in hits} == {a["id"] for a in added} - {added[2]["id"], added[4]["id"]}
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_a_large_agent_switches_to_approximate_search_with_the_same_answers(app, client, agent):
    app.state.services.indexes = IndexCache(approximate_from=40)
    texts = [f"lesson {i}: {TOPICS[i % 6]} in year {2000 + i}" for i in range(60)]
    client.add_experiences(agent["id"], [{"text": t} for t in texts])
    exact = IndexCache(approximate_from=10**9)
    from service.db import transaction
    from service.models import Agent

    services = app.state.services
    query = services.embedder.encode(["gold rose in a banking scare in year 2014"])[0]
    with transaction(services.sessions) as session:
        row = session.get(Agent, agent["id"])
        approximate = services.indexes.search(session, row, query, 4)
        assert services.indexes.budget.peek("index", agent["id"]).approximate
        assert exact.search(session, row, query, 4) == approximate
    hits = client.search_experiences(agent["id"], "gold rose in a banking scare in year 2014", k=4)["hits"]
    assert [h["id"] for h in hits] == [h for h, _ in approximate]
