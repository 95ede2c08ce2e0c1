"""Service: experiences (add, list, get, search, update, retire, delete)."""

import json

import pytest
from support import make_tenant, raw

from service.client import MemtrialClient, ServiceError

LESSONS = [
    "Long-duration bonds rallied when the central bank cut rates.",
    "Equities fell sharply after a surprise inflation print.",
    "Gold held up during a banking scare.",
    "Cash was the best place to wait out a volatile month.",
]


def test_add_one_and_a_batch_then_list_with_pagination(client, agent):
    single = client.add_experience(agent["id"], LESSONS[0], metadata={"source": "warm-up"})
    assert single["metadata"] == {"source": "warm-up"} and single["active"] is True
    assert single["value"] == {
        "mean": 0.0,
        "sd": None,
        "n": 0,
        "lower": None,
        "upper": None,
        "p_positive": None,
        "interval": None,
    }
    assert single["write"] == "created"
    batch = client.add_experiences(agent["id"], [{"text": t} for t in LESSONS[1:]])
    assert [item["text"] for item in batch["items"]] == LESSONS[1:]
    page = client.list_experiences(agent["id"], limit=2, offset=1)
    assert page["total"] == 4 and [item["text"] for item in page["items"]] == LESSONS[1:3]


def test_search_ranks_the_most_similar_lesson_first(client, agent):
    client.add_experiences(agent["id"], [{"text": t} for t in LESSONS])
    hits = client.search_experiences(agent["id"], "interest rate cuts and the bond market", k=2)["hits"]
    assert hits[0]["text"] == LESSONS[0]
    assert len(hits) == 2 and hits[0]["score"] >= hits[1]["score"]


@pytest.mark.parametrize("query", ["", 5, None])
def test_a_bad_search_query_is_refused_naming_query(client, agent, http, query):
    """The body field is named ``query``: an error there named ``body``, as if the body were not an object."""
    path = f"/v1/agents/{agent['id']}/experiences/search"
    body = {"k": 2} if query is None else {"query": query, "k": 2}
    response = raw(http, client, "POST", path, json.dumps(body))
    error = response.json()["error"]
    assert (response.status_code, error["field"]) == (422, "query") and error["message"].startswith("query: "), error


def test_retired_experiences_are_kept_but_not_retrieved(client, agent):
    ids = [item["id"] for item in client.add_experiences(agent["id"], [{"text": t} for t in LESSONS])["items"]]
    retired = client.retire_experience(agent["id"], ids[0])
    assert retired["active"] is False
    hits = client.search_experiences(agent["id"], "interest rate cuts and the bond market", k=4)["hits"]
    assert ids[0] not in [hit["id"] for hit in hits]
    assert client.list_experiences(agent["id"], active=False)["total"] == 1


def test_patch_replaces_metadata(client, agent):
    experience = client.add_experience(agent["id"], LESSONS[0], metadata={"a": 1})
    assert client.update_experience(agent["id"], experience["id"], {"b": 2})["metadata"] == {"b": 2}
    assert client.get_experience(agent["id"], experience["id"])["metadata"] == {"b": 2}


def test_delete_removes_the_experience(client, agent):
    experience = client.add_experience(agent["id"], LESSONS[0])
    client.delete_experience(agent["id"], experience["id"])
    with pytest.raises(ServiceError) as error:
        client.get_experience(agent["id"], experience["id"])
    assert (error.value.status, error.value.message) == (404, f"experience {experience['id']!r} not found")
    assert client.search_experiences(agent["id"], LESSONS[0])["hits"] == []


def test_another_tenants_experience_is_404(client, http, database_url, agent):
    experience = client.add_experience(agent["id"], LESSONS[0])
    other = MemtrialClient(api_key=make_tenant(database_url, "other"), http=http)
    with pytest.raises(ServiceError) as error:
        other.get_experience(agent["id"], experience["id"])
    assert error.value.status == 404


def test_empty_text_is_422_naming_the_field(client, agent):
    with pytest.raises(ServiceError) as error:
        client.add_experience(agent["id"], "")
    assert error.value.status == 422
    assert error.value.field == "text"


@pytest.mark.parametrize(("text", "rule"), [("", "at least 1 character"), ("x" * 20_001, "at most 20000 characters")])
def test_a_bad_text_in_a_batch_is_named_by_its_position(client, agent, text, rule):
    with pytest.raises(ServiceError) as error:
        client.add_experiences(agent["id"], [{"text": "fine"}, {"text": text}])
    assert (error.value.status, error.value.field) == (422, "experiences.1.text")
    assert rule in error.value.message


def test_batches_are_bounded_in_count_and_in_text(client, agent):
    with pytest.raises(ServiceError) as error:
        client.add_experiences(agent["id"], [{"text": "x"}] * 257)
    assert (error.value.status, error.value.field) == (422, "experiences")
    with pytest.raises(ServiceError) as error:
        client.add_experiences(agent["id"], [{"text": "y" * 20_000}] * 51)
    assert "at most 1000000 characters of text" in error.value.message
