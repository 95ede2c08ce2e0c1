"""Service: bring your own retrieval (plans on client-chosen experiences) and external ids (mirroring a
memory store's experiences without duplicates)."""

import datetime as dt

import pytest
from support import UNIVERSE, make_tenant

from service.client import MemtrialClient, ServiceError

START = dt.datetime(2021, 1, 29, 21, 0, tzinfo=dt.UTC)
LESSONS = [
    "Bonds rallied when rates were cut.",
    "Equities dropped after an inflation surprise.",
    "Gold held up in a banking scare.",
    "Cash protected the book in a volatile month.",
    "Momentum in equities persisted for a quarter.",
]
DRAFT = {"SPY": 0.4, "TLT": 0.3, "GLD": 0.1, "BIL": 0.2}
RETURNS = {"SPY": [0.01, -0.004], "TLT": [-0.002, 0.003], "GLD": [0.0, 0.002], "BIL": [0.0001, 0.0001]}


def plan(client, agent, t=0, **kwargs):
    time = START + dt.timedelta(days=30 * t)
    return client.create_decision(agent["id"], time, time + dt.timedelta(days=28), f"month {t}", horizon=2, **kwargs)


@pytest.fixture
def mirrored(client, agent):
    items = [{"text": text, "external_id": f"mem-{i}", "metadata": {"i": i}} for i, text in enumerate(LESSONS)]
    return agent, client.add_experiences(agent["id"], items)["items"]


class _NoEmbedding:
    def __init__(self, embedder):
        self.embedder = embedder

    def encode(self, texts):
        raise AssertionError(f"the server embedded {texts!r} although the client chose the experiences")


def test_a_plan_uses_exactly_the_client_chosen_ids_in_order_without_embedding(client, app, mirrored):
    agent, items = mirrored
    chosen = [items[4]["id"], items[0]["id"], items[2]["id"]]
    services = app.state.services
    real, services.embedder = services.embedder, _NoEmbedding(services.embedder)
    try:
        planned = plan(client, agent, retrieved_ids=chosen)
    finally:
        services.embedder = real
    assert planned.retrieval == "client"
    assert [r.id for r in planned.retrieved] == chosen and all(r.score is None for r in planned.retrieved)
    assert [r.external_id for r in planned.retrieved] == ["mem-4", "mem-0", "mem-2"]
    used = {e for subset in planned.subsets for e in subset.experience_ids}
    assert used == set(chosen)
    for subset in planned.subsets:
        assert subset.texts == [LESSONS[int(x[4:])] for x in subset.external_ids]
    decision = client.submit_drafts(agent["id"], planned.decision_id, [DRAFT] * len(planned.subsets))
    settlement = client.settle(
        agent["id"], planned.decision_id, returns=RETURNS, settled_at=START + dt.timedelta(days=29)
    )
    assert decision.status == "decided" and set(settlement.contributions) == set(chosen)


def test_a_plan_by_external_ids_resolves_them_to_the_agent_experiences(client, mirrored):
    agent, items = mirrored
    planned = plan(client, agent, retrieved_external_ids=["mem-3", "mem-1", "mem-0", "mem-2"])
    assert [r.id for r in planned.retrieved] == [items[3]["id"], items[1]["id"], items[0]["id"], items[2]["id"]]
    assert len(planned.subsets) == 8
    assert client.get_decision(agent["id"], planned.decision_id).plan.retrieval == "client"


@pytest.mark.parametrize("field", ["retrieved_ids", "retrieved_external_ids"])
def test_an_empty_retrieval_plans_the_memory_free_draft_alone_without_searching(client, app, mirrored, field):
    # your retrieval found nothing: the plan must not fall back on the server's search of the agent
    agent, _ = mirrored
    services = app.state.services
    real, services.embedder = services.embedder, _NoEmbedding(services.embedder)
    try:
        planned = plan(client, agent, **{field: []})
    finally:
        services.embedder = real
    assert planned.retrieval == "client" and planned.retrieved == []
    assert [(s.mask, s.experience_ids) for s in planned.subsets] == [(0, [])]
    client.submit_drafts(agent["id"], planned.decision_id, [DRAFT])
    settlement = client.settle(
        agent["id"], planned.decision_id, returns=RETURNS, settled_at=START + dt.timedelta(days=29)
    )
    assert settlement.contributions == {}


def test_server_retrieval_is_unchanged_and_says_so(client, mirrored):
    agent, _ = mirrored
    planned = plan(client, agent)
    assert planned.retrieval == "server" and all(r.score is not None for r in planned.retrieved)


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"retrieved_ids": ["nope"]}, "retrieved_ids", "no experience of this agent has the ids ['nope']"),
        ({"retrieved_external_ids": ["mem-0", "gone"]}, "retrieved_external_ids", "external ids ['gone']"),
        ({"retrieved_ids": ["a", "b", "c", "d", "e"]}, "retrieved_ids", "at most k = 4 experiences, got 5"),
        ({"retrieved_ids": list("abcdefghi")}, "retrieved_ids", "at most 8"),
        ({"retrieved_ids": ["a", "a"]}, "retrieved_ids", "repeated: ['a']"),
        ({"retrieved_ids": ["a"], "retrieved_external_ids": ["b"]}, "retrieved_external_ids", "not both"),
    ],
)
def test_bad_retrieved_ids_are_422_naming_the_field(client, mirrored, body, field, words):
    agent, _ = mirrored
    with pytest.raises(ServiceError) as error:
        plan(client, agent, **body)
    assert error.value.status == 422 and error.value.field == field and words in error.value.message
    assert client.list_decisions(agent["id"]).items == []  # nothing was planned


def test_another_agents_or_tenants_experiences_cannot_be_chosen(client, http, database_url, mirrored):
    agent, items = mirrored
    other_agent = client.create_agent("other", "balanced", UNIVERSE)
    with pytest.raises(ServiceError) as error:
        plan(client, other_agent, retrieved_ids=[items[0]["id"]])
    assert error.value.status == 422 and items[0]["id"] in error.value.message
    stranger = MemtrialClient(api_key=make_tenant(database_url, "stranger"), http=http)
    theirs = stranger.create_agent("theirs", "balanced", UNIVERSE)
    with pytest.raises(ServiceError) as error:
        plan(stranger, theirs, retrieved_external_ids=["mem-0"])
    assert error.value.status == 422 and error.value.field == "retrieved_external_ids"


def test_a_retired_experience_cannot_be_chosen(client, mirrored):
    agent, items = mirrored
    client.retire_experience(agent["id"], items[1]["id"])
    with pytest.raises(ServiceError) as error:
        plan(client, agent, retrieved_external_ids=["mem-1"])
    assert error.value.status == 422 and "['mem-1'] are retired" in error.value.message


def test_adding_an_external_id_again_updates_instead_of_duplicating(client, mirrored):
    agent, items = mirrored
    again = client.add_experience(agent["id"], LESSONS[0], metadata={"i": 0}, external_id="mem-0")
    assert (again.id, again.write) == (items[0]["id"], "unchanged")
    tagged = client.add_experience(agent["id"], LESSONS[0], metadata={"i": 0, "tag": "x"}, external_id="mem-0")
    assert (tagged.id, tagged.write, tagged.metadata) == (items[0]["id"], "updated", {"i": 0, "tag": "x"})
    batch = client.add_experiences(
        agent["id"],
        [{"text": "Gold rallied when real yields fell.", "external_id": "mem-2"}, {"text": "New.", "external_id": "n"}],
    )
    assert [(i.id == items[2]["id"], i.write) for i in batch.items] == [(True, "updated"), (False, "created")]
    assert client.list_experiences(agent["id"]).total == len(LESSONS) + 1
    page = client.list_experiences(agent["id"], external_id="mem-2")
    assert [(i.id, i.text) for i in page.items] == [(items[2]["id"], "Gold rallied when real yields fell.")]
    assert client.list_experiences(agent["id"], external_id="absent").items == []


def test_a_rewritten_text_is_found_by_its_new_content_and_keeps_its_value(client, mirrored):
    agent, items = mirrored
    planned = plan(client, agent, retrieved_external_ids=["mem-0", "mem-1", "mem-2", "mem-3"])
    client.submit_drafts(agent["id"], planned.decision_id, [DRAFT] * 8)
    client.settle(agent["id"], planned.decision_id, returns=RETURNS, settled_at=START + dt.timedelta(days=29))
    before = client.get_experience(agent["id"], items[3]["id"])
    client.add_experience(agent["id"], "Copper surged on a mining strike in Chile.", external_id="mem-3")
    hits = client.search_experiences(agent["id"], "copper supply shock from a strike", k=1).hits
    assert [(h.id, h.external_id) for h in hits] == [(items[3]["id"], "mem-3")]
    assert client.search_experiences(agent["id"], LESSONS[3], k=5).hits[0].id != items[3]["id"]
    after = client.get_experience(agent["id"], items[3]["id"])
    assert after.value.n == before.value.n == 1 and len(after.contributions) == 1


def test_a_batch_naming_one_external_id_twice_is_422_and_adds_nothing(client, agent):
    with pytest.raises(ServiceError) as error:
        client.add_experiences(agent["id"], [{"text": "a", "external_id": "x"}, {"text": "b", "external_id": "x"}])
    assert error.value.status == 422 and "'x' is given twice" in error.value.message
    assert error.value.field.startswith("experiences")
    assert client.list_experiences(agent["id"]).total == 0


COMPOSED, DECOMPOSED = "caf\u00e9", "cafe\u0301"  # one id, two spellings of its é


def test_an_external_id_is_one_id_in_either_unicode_spelling(client, agent):
    first = client.add_experience(agent["id"], LESSONS[0], external_id=COMPOSED)
    again = client.add_experience(agent["id"], LESSONS[1], external_id=DECOMPOSED)
    assert (again.id, again.write, again.external_id) == (first.id, "updated", COMPOSED)
    assert client.list_experiences(agent["id"]).total == 1
    for spelling in (COMPOSED, DECOMPOSED):
        assert [i.id for i in client.list_experiences(agent["id"], external_id=spelling).items] == [first.id]
        planned = plan(client, agent, t=len(spelling), retrieved_external_ids=[spelling])
        assert [r.id for r in planned.retrieved] == [first.id] and planned.retrieved[0].external_id == COMPOSED
    with pytest.raises(ServiceError) as error:
        client.add_experiences(
            agent["id"], [{"text": "a", "external_id": COMPOSED}, {"text": "b", "external_id": DECOMPOSED}]
        )
    assert error.value.status == 422 and f"{COMPOSED!r} is given twice" in error.value.message
    with pytest.raises(ServiceError) as error:
        plan(client, agent, t=9, retrieved_external_ids=[COMPOSED, DECOMPOSED])
    assert (error.value.status, error.value.field) == (422, "retrieved_external_ids")


def test_a_nul_in_the_external_id_a_listing_asks_for_is_422_naming_it(client, agent):
    # PostgreSQL's text holds no NUL: the query failed with a 500 there (SQLite found nothing)
    with pytest.raises(ServiceError) as error:
        client.list_experiences(agent["id"], external_id="a\x00b")
    assert (error.value.status, error.value.field) == (422, "external_id")


def test_an_external_id_longer_than_200_in_its_normal_form_is_422_naming_it_and_writes_nothing(client, agent):
    # U+0958 is two characters in normal form C: 200 given are 400 stored (a 500 on PostgreSQL's column before)
    lengthens = "\u0958"
    for body in (
        {"text": "t", "external_id": lengthens * 200},
        {"text": "t", "external_id": lengthens * 101},
    ):
        with pytest.raises(ServiceError) as error:
            client.add_experiences(agent["id"], [{"text": "fine", "external_id": "ok"}, body])
        assert error.value.status == 422 and error.value.field == "experiences.1.external_id", error.value.field
        assert "at most 200 characters in Unicode normal form C" in error.value.message
    assert client.list_experiences(agent["id"]).total == 0
    kept = client.add_experience(agent["id"], "t", external_id=lengthens * 100)  # 200 in its normal form
    assert len(kept.external_id) == 200
    assert [i.id for i in client.list_experiences(agent["id"], external_id=kept.external_id).items] == [kept.id]
