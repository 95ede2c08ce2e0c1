"""The sync and async clients: typed answers, one operation set, retries that never create twice."""

import asyncio
import contextlib
import datetime as dt
import inspect
import typing

import httpx
import numpy as np
import pytest
from support import UNIVERSE, LoseFirstAnswer, make_tenant

from service.api_types import AgentPublic, DecisionPublic, PlanPublic, SettlementPublic, VerifyPublic
from service.client import AsyncMemtrialClient, MemtrialClient, Operation, Operations, ServiceError

START = dt.datetime(2024, 1, 31, 21, 0, tzinfo=dt.UTC)
DRAFT = {"SPY": 0.4, "TLT": 0.3, "GLD": 0.2, "BIL": 0.1}
RETURNS = {"SPY": [0.01, -0.002], "TLT": [0.002, 0.001], "GLD": [-0.001, 0.003], "BIL": [0.0001, 0.0001]}


async def decision_loop(client: AsyncMemtrialClient, n: int) -> tuple[str, list[SettlementPublic]]:
    agent = await client.create_agent("async-fund", "balanced", UNIVERSE)
    assert isinstance(agent, AgentPublic)
    await client.add_experiences(
        agent.id, ["bonds rallied on cuts", "equities fell on inflation", "gold held up", "cash was safe"]
    )
    settlements = []
    for t in range(n):
        when = START + dt.timedelta(days=31 * t)
        plan = await client.create_decision(agent.id, when, when + dt.timedelta(days=28), f"month {t}", horizon=2)
        assert isinstance(plan, PlanPublic)
        decision = await client.submit_drafts(agent.id, plan.decision_id, [DRAFT] * len(plan.subsets))
        assert isinstance(decision, DecisionPublic) and decision.weights is not None
        settlements.append(
            await client.settle(agent.id, plan.decision_id, returns=RETURNS, settled_at=when + dt.timedelta(days=28))
        )
    return agent.id, settlements


def test_the_async_client_runs_an_agent_loop_with_typed_answers(
    app, http, database_url
):  # http: the app's lifespan runs
    async def main():
        transport = httpx.ASGITransport(app=app)
        async with AsyncMemtrialClient(
            api_key=make_tenant(database_url, "async"),
            http=httpx.AsyncClient(transport=transport, base_url="http://memtrial"),
        ) as client:
            agent_id, settlements = await decision_loop(client, 3)
            assert all(isinstance(s, SettlementPublic) and s.status == "settled" for s in settlements)
            statuses = [d.status async for d in client.iter_decisions(agent_id, page_size=2)]
            assert statuses == ["settled"] * 3
            verified = await client.verify(agent_id)
            assert isinstance(verified, VerifyPublic) and verified.ok and verified.n_entries == 6
            with pytest.raises(ServiceError) as missing:
                await client.get_agent("0" * 32)
            assert missing.value.status == 404

    asyncio.run(main())


@contextlib.contextmanager
def losing_first_answer(http, database_url, tenant, suffix, retries=2):
    """A client of a new tenant whose first answer to a POST ending in ``suffix`` is lost; with the transport."""
    flaky = LoseFirstAnswer(http._transport, suffix)
    with httpx.Client(transport=flaky, base_url=str(http.base_url)) as raw:
        yield MemtrialClient(api_key=make_tenant(database_url, tenant), http=raw, retries=retries), flaky


@pytest.mark.parametrize("suffix", ["/v1/agents", "/settle"])
def test_a_retried_create_after_a_lost_answer_creates_once_and_gets_the_first_answer(http, database_url, suffix):
    with losing_first_answer(http, database_url, "retry", suffix) as (client, flaky):
        agent = client.create_agent("once", "balanced", UNIVERSE)
        client.add_experiences(agent.id, ["a", "b", "c", "d"])
        plan = client.create_decision(agent.id, START, START + dt.timedelta(days=28), "x", horizon=2)
        client.submit_drafts(agent.id, plan.decision_id, [DRAFT] * len(plan.subsets))
        settled = client.settle(agent.id, plan.decision_id, returns=RETURNS, settled_at=START + dt.timedelta(days=28))
        assert (
            flaky.lost == 1 and len(flaky.keys) == 2 and flaky.keys[0] == flaky.keys[1] is not None
        )  # one key, reused by the retry
        assert [a.name for a in client.iter_agents()] == ["once"]
        assert settled.status == "settled" and client.verify(agent.id).n_entries == 2  # settled once: one score


@pytest.mark.parametrize("suffix", ["/experiences/search", "/experiences/rank"])
def test_a_search_or_a_rank_whose_answer_was_lost_is_resent(http, database_url, suffix):
    """Both are POSTs that write nothing: resent as a GET is, where they raised the lost connection."""
    with losing_first_answer(http, database_url, "reads", suffix) as (client, flaky):
        agent = client.create_agent("reads", "balanced", UNIVERSE)
        ids = [e.id for e in client.add_experiences(agent.id, ["a", "b", "c", "d"]).items]
        if suffix.endswith("search"):
            answer = client.search_experiences(agent.id, "a", k=2)["hits"]
        else:
            answer = client.rank_experiences(agent.id, k=2, candidate_ids=ids)["items"]
        assert len(answer) == 2 and flaky.lost == 1 and flaky.keys == [None, None]  # sent twice, without a key


def test_without_retries_a_lost_answer_is_raised(http, database_url):
    with losing_first_answer(http, database_url, "no-retry", "/v1/agents", retries=0) as (client, flaky):
        with pytest.raises(httpx.ReadError) as lost:
            client.create_agent("lost", "balanced", UNIVERSE)
        # sent once, with a key all the same: the error hands it back, to send the call again without doing it twice
        assert len(flaky.keys) == 1 and flaky.keys[0] is not None and lost.value.idempotency_key == flaky.keys[0]


def test_answers_read_like_dicts_for_code_written_against_the_dict_client(client):
    agent = client.create_agent("dicts", "balanced", UNIVERSE)
    assert agent["id"] == agent.id and agent.get("missing") is None and "gate" in agent
    assert agent["gate"] == agent.gate.model_dump()
    with pytest.raises(KeyError):
        agent["missing"]


@pytest.mark.slow  # a live server
def test_the_async_client_against_a_live_server(tmp_path):
    from live_server import Server

    url = f"sqlite:///{tmp_path / 'async.db'}"
    server = Server(url)
    try:

        async def main():
            async with AsyncMemtrialClient(server.url, make_tenant(url, "live")) as client:
                agent_id, settlements = await decision_loop(client, 4)
                agents = [a async for a in client.iter_agents()]
                assert [a.id for a in agents] == [agent_id]
                return settlements

        settlements = asyncio.run(main())
        assert len(settlements) == 4 and all(s.values for s in settlements)
    finally:
        server.stop()


def test_client_ids_holding_a_slash_raise_and_others_are_encoded(client, agent):
    experience = client.add_experience(agent["id"], "keep me")
    with pytest.raises(ValueError, match="agent_id"):
        client.delete_agent(f"{agent['id']}/experiences/{experience['id']}")
    assert client.get_experience(agent["id"], experience["id"])["text"] == "keep me"
    with pytest.raises(ServiceError) as error:
        client.get_agent("no such?agent#x")
    assert error.value.status == 404


OPERATIONS = sorted(name for name, row in vars(Operations).items() if isinstance(row, Operation))


def _public(client_class):
    """The public methods of a client class (its operations read on the class are their table rows)."""
    return sorted(
        name
        for name in dir(client_class)
        if not name.startswith("_")
        and (callable(getattr(client_class, name)) or isinstance(getattr(client_class, name), Operation))
    )


def _answer_of(client_class, name):
    """The type a public method answers (for an operation: what its row says it answers)."""
    member = getattr(client_class, name)
    if isinstance(member, Operation):
        sent = typing.get_type_hints(member.send)["return"]
        return typing.get_args(sent)[0]
    return typing.get_type_hints(member)["return"]


@pytest.mark.parametrize("client_class", [MemtrialClient, AsyncMemtrialClient])
def test_every_public_client_method_answers_a_type_other_than_any(client_class):
    untyped = []
    for name in _public(client_class):
        answer = _answer_of(client_class, name)
        if answer is typing.Any or typing.Any in typing.get_args(answer):
            untyped.append(name)
    assert untyped == []


def test_both_clients_bind_one_table_of_operations_with_the_same_signatures():
    sync, asynchronous = MemtrialClient("http://memtrial.invalid"), AsyncMemtrialClient("http://memtrial.invalid")
    paging = {"iter_agents", "iter_experiences", "iter_decisions", "iter_log"}
    assert set(_public(MemtrialClient)) - paging - {"close"} == set(OPERATIONS)
    assert set(_public(AsyncMemtrialClient)) - paging - {"aclose"} == set(OPERATIONS)
    for name in OPERATIONS:
        assert getattr(MemtrialClient, name) is getattr(AsyncMemtrialClient, name)
        assert inspect.signature(getattr(sync, name)) == inspect.signature(getattr(asynchronous, name))
        assert getattr(sync, name).__name__ == name


def test_an_operation_refuses_an_id_that_is_a_path_before_sending_anything():
    client = AsyncMemtrialClient("http://memtrial.invalid")
    with pytest.raises(ValueError, match="decision_id must be a single id, not a path: got 'a/b'"):
        client.get_decision("agent", "a/b")  # raised at the call, before anything is awaited


def _answer(status, error_code=None):
    import httpx

    if error_code is None:  # a proxy's answer: not the service's envelope
        return httpx.Response(status, text="<html>Bad Gateway</html>", headers={"content-type": "text/html"})
    return httpx.Response(status, json={"error": {"code": error_code, "message": "m", "field": None}})


def test_a_retry_is_sent_only_where_it_cannot_do_twice_what_the_first_attempt_may_have_done():
    import httpx

    from service.client import _Attempts
    from service.operations import Call

    lost = httpx.ConnectError("refused")
    release = Call("POST", "/v1/agents/a/experiences/e/release")  # unkeyed: its change may be done
    create = Call("POST", "/v1/agents/a/decisions", creates=True)
    read = Call("GET", "/v1/agents/a/values")
    rank = Call("POST", "/v1/agents/a/experiences/rank", reads=True)  # a POST that writes nothing
    wait = lambda call, outcome: _Attempts(call, 2, 2.0).wait_after(outcome)  # noqa: E731
    # the service's own 502: server drafting failed and failed the decision, its model calls spent: final
    assert wait(create, _answer(502, "malformed_draft")) is None
    assert wait(create, _answer(502, "drafter_unavailable")) is None
    # a proxy's 502/503/504, or a lost answer: resent for a keyed call or a read, not for an unkeyed change
    # and the service's 503 server_stopping: a server that stopped mid-request may have done it
    for outcome in (lost, _answer(502), _answer(503), _answer(504), _answer(503, "server_stopping")):
        assert wait(create, outcome) == 0.25 and wait(read, outcome) == 0.25 and wait(rank, outcome) == 0.25
        assert wait(release, outcome) is None
    # the service's own 503 (nothing written) and any 429: resent for every call
    for call in (release, create, read):
        assert wait(call, _answer(503, "unavailable")) == 0.25 and wait(call, _answer(429, "rate_limited")) == 0.25


def test_a_retry_after_given_as_an_http_date_is_waited_for():
    import email.utils

    import httpx

    from service.client import _Attempts
    from service.operations import Call

    read = Call("GET", "/v1/agents/a/values")

    def busy(retry_after):
        return httpx.Response(
            503, json={"error": {"code": "unavailable", "message": "m"}}, headers={"retry-after": retry_after}
        )

    soon = email.utils.format_datetime(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=3), usegmt=True)
    assert 1.0 < _Attempts(read, 2, 5.0).wait_after(busy(soon)) <= 3.0  # whole seconds: 2 to 3 s from now
    assert _Attempts(read, 2, 5.0).wait_after(busy("Wed, 21 Oct 2015 07:28:00 GMT")) == 0.0  # past: at once
    assert _Attempts(read, 2, 5.0).wait_after(busy("1.5")) == 1.5
    later = email.utils.format_datetime(dt.datetime.now(dt.UTC) + dt.timedelta(hours=1), usegmt=True)
    assert _Attempts(read, 2, 5.0).wait_after(busy(later)) is None  # beyond max_wait: not waited for
    assert _Attempts(read, 2, 5.0).wait_after(busy("Wed, 21 Oct 2015")) is None  # neither seconds nor a date


def test_numpy_numbers_go_as_the_numbers_they_hold_and_what_json_cannot_carry_is_named(http, database_url):
    client = MemtrialClient(api_key=make_tenant(database_url, "numpy"), http=http)
    agent = client.create_agent("numpy", "balanced", UNIVERSE)
    client.add_experiences(agent.id, ["a", "b", "c", "d"])
    plan = client.create_decision(agent.id, START, START + dt.timedelta(days=28), "x", horizon=2)
    drafts = [{asset: np.float32(weight) for asset, weight in DRAFT.items()}] * len(plan.subsets)
    assert client.submit_drafts(agent.id, plan.decision_id, drafts).weights is not None
    returns = {asset: np.asarray(values, dtype=np.float32) for asset, values in RETURNS.items()}
    settled_at = START + dt.timedelta(days=28)
    unsendable = [
        ({**returns, "SPY": np.array([0.01, np.inf])}, r"^returns\.SPY\.1 must be a finite number \(JSON has no inf\)"),
        ({**returns, "GLD": [0.01, object()]}, r"^returns\.GLD\.1: a object has no JSON form"),
    ]
    for bad, message in unsendable:
        with pytest.raises(ValueError, match=message):
            client.settle(agent.id, plan.decision_id, returns=bad, settled_at=settled_at)
    with pytest.raises(ValueError, match=r"^returns: a key of type int64 \(np.int64\(7\)\) has no JSON form"):
        client.settle(agent.id, plan.decision_id, returns={**returns, np.int64(7): [0.0, 0.0]}, settled_at=settled_at)
    assert client.get_decision(agent.id, plan.decision_id).status == "decided"  # nothing was sent
    assert len(client.list_decisions(agent.id, limit=np.int64(1)).items) == 1  # a NumPy number in the query too
    settled = client.settle(agent.id, plan.decision_id, returns=returns, settled_at=settled_at)
    plain = {asset: [float(v) for v in values] for asset, values in returns.items()}
    assert (
        client.settle(agent.id, plan.decision_id, returns=plain, settled_at=settled_at) == settled
    )  # the same outcome


def test_an_answer_that_is_not_the_operation_s_json_is_a_service_error_and_refusals_carry_their_wait():
    """An empty or HTML 200 where the operation answers JSON (a proxy's, a load balancer's) is a ServiceError
    ``not_json``, not None or a str typed as the answer; a refusal carries its Retry-After and request id."""

    def peer(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/agents/empty":
            return httpx.Response(200, headers={"content-type": "text/html"})
        if path == "/v1/agents/page":
            return httpx.Response(200, text="<html>sign in</html>", headers={"content-type": "text/html"})
        if path == "/v1/agents/broken":
            return httpx.Response(200, text='{"id": ', headers={"content-type": "application/json"})
        if path == "/metrics":
            return httpx.Response(200, text="memtrial_requests_total 3\n", headers={"content-type": "text/plain"})
        error = {"error": {"code": "rate_limited", "message": "too many requests", "field": None}}
        return httpx.Response(429, json=error, headers={"retry-after": "45", "x-request-id": "r-1"})

    http = httpx.Client(base_url="http://peer", transport=httpx.MockTransport(peer))
    client = MemtrialClient(http=http, retries=0)
    for agent_id, said in (("empty", "an empty body"), ("page", "'<html>sign in</html>'"), ("broken", "'{\"id\": '")):
        with pytest.raises(ServiceError) as error:
            client.get_agent(agent_id)
        assert (error.value.status, error.value.code) == (200, "not_json")
        assert str(error.value.message).endswith(said), error.value.message
    assert client.metrics() == "memtrial_requests_total 3\n"
    with pytest.raises(ServiceError) as error:
        client.list_agents()
    assert (error.value.code, error.value.retry_after, error.value.request_id) == ("rate_limited", 45.0, "r-1")


def test_a_creating_call_takes_a_key_of_its_own_and_its_errors_carry_the_key_it_was_sent_with():
    seen = []

    def peer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("idempotency-key"))
        if request.url.path == "/v1/agents/lost/decisions":
            raise httpx.ConnectError("the connection dropped", request=request)
        busy = {"error": {"code": "idempotency_in_progress", "message": "still running", "field": "Idempotency-Key"}}
        return httpx.Response(409, json=busy, headers={"retry-after": "30"})

    transport = httpx.MockTransport(peer)
    client = MemtrialClient(
        http=httpx.Client(base_url="http://peer", transport=transport), retries=0, in_progress_wait=0
    )
    with pytest.raises(ServiceError) as refused:
        client.create_agent("fund", "balanced", UNIVERSE, idempotency_key="agent-fund-1")
    assert seen == ["agent-fund-1"] and refused.value.idempotency_key == "agent-fund-1"
    with pytest.raises(ServiceError) as refused:
        client.settle("a", "d", returns={"SPY": [0.01]})  # a key made for the call: carried all the same
    assert refused.value.idempotency_key == seen[-1] and seen[-1] not in (None, "agent-fund-1")
    with pytest.raises(httpx.ConnectError) as lost:
        client.create_decision("lost", START, START, "ctx", idempotency_key="decision-7")
    assert lost.value.idempotency_key == "decision-7"  # send it again with this key, not as a new call
    with pytest.raises(ServiceError) as refused:
        client.get_agent("a")
    assert refused.value.idempotency_key is None
    sent = len(seen)
    for bad in ("has space", "", "x" * 201, 7):
        with pytest.raises(ValueError, match="idempotency_key must be 1 to 200 letters"):
            client.add_experience("a", "lesson", idempotency_key=bad)
    assert len(seen) == sent  # refused before anything was sent
    assert "idempotency_key" not in inspect.signature(client.update_agent).parameters  # a change, not a creation
    assert "idempotency_key" in inspect.signature(client.start_refit).parameters


def test_a_call_sent_again_with_its_own_key_waits_for_its_first_sending_still_in_progress():
    from service.client import _Attempts
    from service.operations import Call

    busy = httpx.Response(
        409, json={"error": {"code": "idempotency_in_progress", "message": "m"}}, headers={"retry-after": "1"}
    )
    resent = _Attempts(
        Call("POST", "/v1/agents", creates=True, headers={"Idempotency-Key": "agent-fund-1"}), 0, 2.0, 2.5
    )
    assert resent.headers["Idempotency-Key"] == "agent-fund-1"
    assert [resent.wait_after(busy) for _ in range(4)] == [1.0, 1.0, 0.5, None]
    made = _Attempts(Call("POST", "/v1/agents", creates=True), 1, 2.0, 2.5)  # the client's own key: someone else's
    assert made.wait_after(busy) is None
