"""``memtrial mcp`` end to end: the SDK's own client over stdio drives an agent through a live service."""

import asyncio
import json
import os
import sys

import pytest
from support import make_tenant

from memtrial.errors import install_hint

pytest.importorskip("mcp", reason=f"MCP NOT TESTED: the mcp extra is not installed ({install_hint('mcp')})")
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

OUTCOMES = ["up", "flat", "down"]


def payload(result):
    assert not result.isError, result.content[0].text
    return result.structuredContent if result.structuredContent is not None else json.loads(result.content[0].text)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    from live_server import Server

    url = f"sqlite:///{tmp_path_factory.mktemp('mcp') / 'mcp.db'}"
    server = Server(url)
    yield server.url, make_tenant(url, "mcp")
    server.stop()


def stdio_parameters(url, key):
    """``memtrial mcp`` over stdio, as an MCP host starts it, in front of the live service."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memtrial.cli", "mcp"],
        env={**os.environ, "MEMTRIAL_URL": url, "MEMTRIAL_API_KEY": key},
    )


def test_the_mcp_tools_run_an_agent_loop_over_stdio(service):
    url, key = service
    parameters = stdio_parameters(url, key)

    async def main():
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert names >= {
                "create_agent",
                "add_experiences",
                "search_experiences",
                "rank_experiences",
                "release_experience",
                "plan_decision",
                "submit_drafts",
                "settle",
                "get_values",
                "get_trust",
                "verify_chain",
            }
            agent = payload(
                await session.call_tool("create_agent", {"name": "forecaster", "kind": "scored", "outcomes": OUTCOMES})
            )
            lessons = [
                "Rate cuts were followed by rallies.",
                "Inflation surprises hurt.",
                "Quiet months stayed flat.",
                "Earnings beats lifted prices.",
            ]
            ids = payload(await session.call_tool("add_experiences", {"agent_id": agent["id"], "texts": lessons}))[
                "ids"
            ]
            hits = payload(
                await session.call_tool(
                    "search_experiences", {"agent_id": agent["id"], "query": "rates were cut", "k": 2}
                )
            )["hits"]
            assert hits[0]["id"] == ids[0]
            ranked = payload(
                await session.call_tool(
                    "rank_experiences", {"agent_id": agent["id"], "k": 2, "candidate_ids": [ids[2], ids[0], ids[1]]}
                )
            )["items"]
            # no trust evidence yet: the given order is the similarity order
            assert [(r["id"], r["reason"]) for r in ranked] == [(ids[2], "similarity"), (ids[0], "similarity")]
            refused = await session.call_tool(
                "rank_experiences", {"agent_id": agent["id"], "k": 3, "candidate_ids": [ids[0]]}
            )
            assert refused.isError and "memtrial refused (422 invalid): k: " in refused.content[0].text
            assert refused.content[0].text.endswith("(field: k)")  # the field the service named
            scored = 0
            for day in range(3):
                when = f"2024-01-0{day + 1}T12:00:00+00:00"
                plan = payload(
                    await session.call_tool(
                        "plan_decision",
                        {"agent_id": agent["id"], "context": "will it rise?", "decision_time": when, "maturity": when},
                    )
                )
                assert plan["subsets"][0]["texts"] == [] and len(plan["subsets"]) == 8
                drafts = [
                    {"up": 0.6, "flat": 0.2, "down": 0.2}
                    if lessons[0] in s["texts"]
                    else {"up": 0.3, "flat": 0.4, "down": 0.3}
                    for s in plan["subsets"]
                ]
                decision = payload(
                    await session.call_tool(
                        "submit_drafts", {"agent_id": agent["id"], "decision_id": plan["decision_id"], "drafts": drafts}
                    )
                )
                assert set(decision["chosen"]) == set(OUTCOMES) and decision["explanation"]
                settled = payload(
                    await session.call_tool(
                        "settle",
                        {
                            "agent_id": agent["id"],
                            "decision_id": plan["decision_id"],
                            "outcome": "up",
                            "rule": "brier",
                            "settled_at": when,
                        },
                    )
                )
                assert set(settled["contributions"]) == set(ids)
                scored += settled["score"] is not None
            corrected = payload(
                await session.call_tool(
                    "correct_outcome",
                    {
                        "agent_id": agent["id"],
                        "decision_id": plan["decision_id"],
                        "reason": "graded against the wrong question",
                        "outcome": "down",
                        "rule": "brier",
                        "settled_at": when,
                    },
                )
            )
            assert [c["reason"] for c in corrected["corrections"]] == ["graded against the wrong question"]
            assert corrected["corrections"][0]["score_before"] == settled["score"]  # what it replaced
            values = payload(await session.call_tool("get_values", {"agent_id": agent["id"]}))
            top = values["experiences"][0]
            assert top["text"] == lessons[0] and top["lower_90"] <= top["mean"] <= top["upper_90"]
            assert top["status"] == "active" and top["changed_at"] is None  # a quarantine would show here
            refused = await session.call_tool(
                "release_experience", {"agent_id": agent["id"], "experience_id": top["id"], "reason": "reviewed"}
            )
            assert refused.isError and "memtrial refused (409 not_quarantined): " in refused.content[0].text
            trust = payload(await session.call_tool("get_trust", {"agent_id": agent["id"]}))
            assert trust["n_scores"] == scored >= 2  # the first date's predictions are all the prior: skipped
            assert payload(await session.call_tool("verify_chain", {"agent_id": agent["id"]}))["ok"] is True
            refused = await session.call_tool(
                "settle", {"agent_id": agent["id"], "decision_id": "0" * 32, "outcome": "up", "rule": "brier"}
            )
            assert refused.isError and "memtrial refused (404" in refused.content[0].text
            refused = await session.call_tool("get_values", {"agent_id": "0" * 32})  # said as every other tool
            assert refused.isError and "memtrial refused (404 not_found)" in refused.content[0].text

    asyncio.run(main())


def test_the_host_model_drafts_each_subset_in_a_call_of_its_own_through_sampling(service):
    from fake_llm import FakeLLM
    from mcp import types

    url, key = service
    parameters = stdio_parameters(url, key)
    lessons = ["Rate cuts were followed by rallies.", "Inflation surprises hurt.", "Quiet months stayed flat."]
    asked = []

    async def host_model(context, params):  # the host's own LLM, answering each sampling request
        prompt = params.messages[0].content.text
        asked.append((params.systemPrompt, prompt))
        form = prompt.split("Answer with the JSON object ", 1)[1].split(". Return the JSON object only.")[0]
        answer = FakeLLM.scored(form, bytes(range(32)) if len(asked) % 2 else bytes(range(5, 37)))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=answer), model="stand-in"
        )

    async def main():
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write, sampling_callback=host_model) as session,
        ):
            await session.initialize()
            agent = payload(
                await session.call_tool("create_agent", {"name": "sampled", "kind": "scored", "outcomes": OUTCOMES})
            )
            await session.call_tool("add_experiences", {"agent_id": agent["id"], "texts": lessons})
            when = "2024-02-01T12:00:00+00:00"
            plan = payload(
                await session.call_tool(
                    "plan_decision",
                    {"agent_id": agent["id"], "context": "Will it rise?", "decision_time": when, "maturity": when},
                )
            )
            one = payload(
                await session.call_tool(
                    "draft_prompt", {"agent_id": agent["id"], "decision_id": plan["decision_id"], "index": 3}
                )
            )
            assert one["lessons"] == plan["subsets"][3]["texts"] and "Will it rise?" in one["prompt"]
            shown = await session.get_prompt(
                "draft_subset", {"agent_id": agent["id"], "decision_id": plan["decision_id"], "index": "3"}
            )
            assert one["prompt"] in shown.messages[0].content.text
            assert plan["horizon"] is None  # a scored decision holds no sessions
            negative = await session.call_tool(
                "draft_with_host_model",
                {"agent_id": agent["id"], "decision_id": plan["decision_id"], "max_retries": -1},
            )
            assert negative.isError and "max_retries: the retries of a malformed answer per subset, 0 to 5, got -1" in (
                negative.content[0].text
            )
            assert not asked  # refused before any model call
            decision = payload(
                await session.call_tool(
                    "draft_with_host_model", {"agent_id": agent["id"], "decision_id": plan["decision_id"]}
                )
            )
            calls = len(asked)
            again = await session.call_tool(
                "draft_with_host_model", {"agent_id": agent["id"], "decision_id": plan["decision_id"]}
            )  # decided already: refused before any model call is paid for
            assert again.isError and "is decided, not waiting for drafts: nothing was drafted" in again.content[0].text
            assert len(asked) == calls
            # a host's own store: lessons added under its ids, ranked and planned on by them
            added = payload(
                await session.call_tool(
                    "add_experiences",
                    {
                        "agent_id": agent["id"],
                        "texts": ["Tariffs hurt.", "Holidays were calm."],
                        "external_ids": ["t", "h"],
                    },
                )
            )
            ranked = payload(
                await session.call_tool(
                    "rank_experiences", {"agent_id": agent["id"], "k": 1, "candidate_external_ids": ["h", "t"]}
                )
            )["items"]
            assert [r["id"] for r in ranked] == [added["ids"][1]]
            mine = payload(
                await session.call_tool(
                    "plan_decision",
                    {
                        "agent_id": agent["id"],
                        "context": "Will it rise?",
                        "decision_time": when,
                        "maturity": when,
                        "retrieved_external_ids": ["h"],
                    },
                )
            )
            assert {t for s in mine["subsets"] for t in s["texts"]} == {"Holidays were calm."}  # that one only
            return plan, one, decision

    plan, one, decision = asyncio.run(main())
    assert decision["model_calls"] == 8  # every sampling request, retries included (none were needed)
    assert len(asked) == len(plan["subsets"]) == 8  # one model call per designed subset
    shown = sorted(tuple(t for t in lessons if json.dumps(t) in prompt) for _, prompt in asked)
    assert shown == sorted(tuple(t for t in lessons if t in s["texts"]) for s in plan["subsets"])
    assert {system for system, _ in asked} == {one["system"]}
    assert decision["draft_calls"] == 8 and set(decision["chosen"]) == set(OUTCOMES)


def test_a_host_without_sampling_is_told_to_draft_each_subset_separately(service):
    url, key = service
    parameters = stdio_parameters(url, key)

    async def main():
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            agent = payload(await session.call_tool("create_agent", {"name": "plain", "outcomes": OUTCOMES}))
            await session.call_tool("add_experiences", {"agent_id": agent["id"], "texts": ["a lesson"]})
            plan = payload(
                await session.call_tool(
                    "plan_decision",
                    {"agent_id": agent["id"], "context": "x", "decision_time": "2024-03-01T00:00:00+00:00"},
                )
            )
            return await session.call_tool(
                "draft_with_host_model", {"agent_id": agent["id"], "decision_id": plan["decision_id"]}
            )

    refused = asyncio.run(main())
    assert refused.isError and "does not offer sampling: call draft_prompt for each subset" in refused.content[0].text


def test_the_mcp_command_needs_an_api_key():
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "MEMTRIAL_API_KEY"}
    result = subprocess.run(
        [sys.executable, "-m", "memtrial.cli", "mcp"], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 2 and "an API key is needed" in result.stderr


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("127.0.0.1:8000", "must be an http(s) URL with a host"),
        ("ftp://host", "must be an http(s) URL with a host"),
        ("http://", "must be an http(s) URL with a host"),
        ("http://host:port", "must be an http(s) URL such as http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000/?x=1", "without a query or a fragment"),
        (" http://127.0.0.1:8000", "must not begin or end with white space"),
    ],
)
def test_the_mcp_command_refuses_a_service_url_of_the_wrong_form_before_serving(url, said):
    from typer.testing import CliRunner

    from memtrial.cli.console import app

    result = CliRunner().invoke(app, ["mcp", "--url", url, "--api-key", "mt_x"])
    assert result.exit_code == 2 and said in result.output and repr(url) in result.output, result.output


def test_the_mcp_command_without_the_sdk_says_so_in_one_line(tmp_path):
    import subprocess

    blocker = tmp_path / "sitecustomize.py"  # this process sees no mcp package, as without the extra
    blocker.write_text(
        "import sys\n\n\nclass NoMcp:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'mcp' or name.startswith('mcp.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name='mcp')\n\n\n"
        "sys.meta_path.insert(0, NoMcp())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "MEMTRIAL_API_KEY": "mt_x"}
    result = subprocess.run(
        [sys.executable, "-m", "memtrial.cli", "mcp"], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: memtrial mcp needs mcp, which is not installed: {install_hint('mcp')}"
    ]


TOKEN = "mcp-token-for-the-test-0123456789"


@pytest.mark.slow  # a second server process
def test_the_mcp_tools_are_served_over_streamable_http(service):
    import subprocess
    import time

    from live_server import free_port
    from mcp.client.streamable_http import streamable_http_client

    url, key = service
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "memtrial.cli", "mcp", "--transport", "http", "--port", str(port)],
        env={**os.environ, "MEMTRIAL_URL": url, "MEMTRIAL_API_KEY": key, "MEMTRIAL_MCP_TOKEN": TOKEN},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    async def main():
        import httpx

        authorised = httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        async with (
            authorised,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=authorised) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            agents = payload(await session.call_tool("list_agents", {}))
            return {tool.name for tool in (await session.list_tools()).tools}, agents

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                names, agents = asyncio.run(main())
                break
            except Exception:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)  # the server is still starting: connect again
        assert "plan_decision" in names and "items" in agents
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_mcp_http_endpoint_refuses_requests_without_its_token():
    pytest.importorskip("mcp", reason="the MCP SDK ([mcp] extra) is not installed")
    from starlette.testclient import TestClient

    from service.mcp import http_app

    token = "t" * 32
    with TestClient(http_app("http://127.0.0.1:9", "mt_key", token), base_url="http://127.0.0.1:8765") as http:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        headers = {"Accept": "application/json, text/event-stream"}
        for given in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"}):
            refused = http.post("/mcp", json=body, headers={**headers, **given})
            assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
        served = http.post("/mcp", json=body, headers={**headers, "Authorization": f"Bearer {token}"})
        assert served.status_code == 200


def test_mcp_over_http_will_not_start_without_a_token(monkeypatch):
    pytest.importorskip("mcp", reason="the MCP SDK ([mcp] extra) is not installed")
    from typer.testing import CliRunner

    from memtrial.cli.commands import app

    monkeypatch.delenv("MEMTRIAL_MCP_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["mcp", "--transport", "http", "--api-key", "mt_x"])
    assert result.exit_code == 2 and "bearer token" in result.output


def test_the_mcp_guide_names_every_tool_the_server_lists():
    from pathlib import Path

    from service.mcp import TOOLS

    guide = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "mcp.md").read_text()
    assert [t.__name__ for t in TOOLS if f"`{t.__name__}`" not in guide] == []


def test_plan_decision_with_a_time_that_is_not_one_names_decision_time():
    from service.mcp import plan_decision

    with pytest.raises(ValueError) as refused:
        asyncio.run(plan_decision(None, "agent", "context", decision_time="yesterday"))  # refused before any call
    assert str(refused.value) == "decision_time: an ISO 8601 time, e.g. 2026-01-05T12:00:00Z, got 'yesterday'"


def test_an_mcp_host_sees_each_quarantined_experience_with_its_evidence(service):
    """get_values shows a quarantined experience's status but not why; list_quarantined shows the evidence."""
    import datetime as dt

    from service.client import MemtrialClient

    url, key = service
    with MemtrialClient(url, key) as client:
        agent = client.create_agent("quarantines", kind="scored", quarantine={"enabled": True, "level": 0.2})
        texts = ["Bet on every rumour.", "Rate cuts were followed by rallies.", "Quiet months stayed flat."]
        harmful, *others = (e.id for e in client.add_experiences(agent.id, texts).items)
        start = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
        for t in range(40):
            when = start + dt.timedelta(days=t)
            plan = client.create_decision(agent.id, when, when, f"day {t}", candidate_ids=[harmful, *others])
            client.submit_drafts(agent.id, plan.decision_id, [f"draft {i}" for i in range(len(plan.subsets))])
            utilities = [-0.5 * (harmful in s.experience_ids) + 0.01 * (t % 3) for s in plan.subsets]
            client.settle(agent.id, plan.decision_id, utilities=utilities, settled_at=when)
            if client.list_experiences(agent.id, status="quarantined").items:
                break
        assert [e.id for e in client.list_experiences(agent.id, status="quarantined").items] == [harmful]

    async def main():
        async with stdio_client(stdio_parameters(url, key)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return payload(await session.call_tool("list_quarantined", {"agent_id": agent.id}))

    listed = asyncio.run(main())["experiences"]
    assert [(e["id"], e["text"]) for e in listed] == [(harmful, texts[0])]
    evidence = listed[0]["evidence"]
    assert evidence["e_value"] >= evidence["threshold"] and evidence["mean"] < 0 and evidence["date"]


def test_settle_and_correct_outcome_pass_on_the_services_warnings(service):
    """A session return of 50% or more is accepted with a warning naming the asset and the session (the one
    guard against percentages sent as fractions): the tools dropped it."""
    from service import mcp as tools

    url, key = service
    memtrial = tools.Service(url, key)

    async def main():
        universe = [{"asset": "SPY", "asset_class": "equities"}, {"asset": "BIL", "asset_class": "cash"}]
        agent = await tools.create_agent(memtrial, "warned", kind="portfolio", investor="balanced", universe=universe)
        plan = await tools.plan_decision(
            memtrial, agent["id"], "a quiet week", "2024-01-02T21:00:00+00:00", "2024-01-04T21:00:00+00:00", horizon=2
        )
        drafts = [{"SPY": 0.5, "BIL": 0.5}] * len(plan["subsets"])
        await tools.submit_drafts(memtrial, agent["id"], plan["decision_id"], drafts)
        returns = {"SPY": [0.6, 0.01], "BIL": [0.0, 0.0]}
        settled = await tools.settle(memtrial, agent["id"], plan["decision_id"], returns=returns)
        corrected = await tools.correct_outcome(
            memtrial, agent["id"], plan["decision_id"], "a second feed", returns={"SPY": [0.7, 0.0], "BIL": [0.0, 0.0]}
        )
        return settled, corrected

    settled, corrected = asyncio.run(main())
    for answer in (settled, corrected):
        assert [w["field"] for w in answer["warnings"]] == ["returns.SPY"]


def test_a_second_host_model_drafting_of_one_decision_is_refused_before_it_samples():
    """Two draft_with_host_model calls for one decision would each pay for every subset's model calls, and the
    service would then refuse one of them: this server refuses the second before it samples anything."""
    from types import SimpleNamespace

    from service.mcp import Service, draft_with_host_model

    sampled = []

    async def create_message(*_, **__):  # the host's model, as the tool samples it
        sampled.append(1)

    ctx = SimpleNamespace(
        session=SimpleNamespace(
            client_params=SimpleNamespace(capabilities=SimpleNamespace(sampling=object())),
            create_message=create_message,
        )
    )
    service = Service("http://127.0.0.1:9", "mt_x")  # nothing listens there: any call to it fails
    service.drafting.add(("a", "d"))  # a first call drafting decision d now
    with pytest.raises(ValueError, match="decision 'd' is being drafted by another draft_with_host_model call"):
        asyncio.run(draft_with_host_model(service, "a", "d", ctx))
    assert sampled == [] and service.drafting == {("a", "d")}  # the first call's mark is its own
    with pytest.raises(Exception):  # noqa: B017 (the service is unreachable: whatever the client raises)
        asyncio.run(draft_with_host_model(service, "a", "other", ctx))
    assert service.drafting == {("a", "d")}  # a call that failed lets go of its decision


def test_a_host_that_leaves_a_sampling_request_unanswered_fails_the_call_and_the_decision_waits(service):
    """draft_with_host_model bounds each sampling request: a host that never answers one fails the call within
    the server's --sampling-timeout (nothing submitted, the drafting mark let go); a call that fails on one
    subset stops waiting for its other requests; the decision, still planned, is drafted by the next call."""
    from service.client import MemtrialClient

    url, key = service
    with MemtrialClient(url, key) as client:
        _unanswered_then_answered(client, url, key)


def _unanswered_then_answered(client, url, key):
    from types import SimpleNamespace

    from fake_llm import FakeLLM
    from mcp import types

    from service.mcp import Service, draft_with_host_model

    agent = client.create_agent("unanswered", kind="scored", outcomes=OUTCOMES)
    client.add_experiences(agent.id, [{"text": t} for t in ("Cuts helped.", "Tariffs hurt.", "Calm months.")])
    when = "2024-02-01T12:00:00+00:00"
    planned = client.create_decision(agent.id, when, when, "Will it rise?")
    answered = []

    def reply(text):
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=text), model="m")

    async def answering(*, messages, **_):
        answered.append(1)
        form = messages[0].content.text.split("Answer with the JSON object ", 1)[1].split(". Return the JSON")[0]
        return reply(FakeLLM.scored(form, bytes(range(32))))

    async def never(**_):
        await asyncio.Event().wait()

    async def first_malformed(**request):
        if not answered and not getattr(first_malformed, "done", False):
            first_malformed.done = True
            return reply("not a forecast")
        await asyncio.sleep(0.3)  # the others would be answered after the call failed, were they not cancelled
        return await answering(**request)

    def host(create_message):
        capabilities = SimpleNamespace(capabilities=SimpleNamespace(sampling=object()))
        return SimpleNamespace(session=SimpleNamespace(client_params=capabilities, create_message=create_message))

    async def fails(create_message, **options):
        with pytest.raises(ValueError) as failed:
            await draft_with_host_model(tool, agent.id, planned.decision_id, host(create_message), **options)
        await asyncio.sleep(0.6)  # past the time the other requests would have been answered
        return str(failed.value)

    tool = Service(url, key, sampling_timeout=0.5)
    assert asyncio.run(fails(never)) == (
        "the host did not answer a sampling request within 0.5 s (memtrial mcp --sampling-timeout): nothing was "
        f"submitted and decision {planned.decision_id!r} stays planned; call draft_with_host_model again, or draft "
        "each subset with draft_prompt and submit_drafts"
    )
    assert tool.drafting == set()  # the failed call let go of its decision
    said = asyncio.run(fails(first_malformed, max_retries=0))
    assert said == "the host model's answers were malformed 1 time in a row" and answered == []  # others cancelled
    assert client.get_decision(agent.id, planned.decision_id).status == "planned"
    decided = asyncio.run(draft_with_host_model(tool, agent.id, planned.decision_id, host(answering)))
    assert decided["model_calls"] == len(answered) == 8
    assert client.get_decision(agent.id, planned.decision_id).status == "decided"


def test_an_mcp_host_chooses_and_changes_how_an_agent_curates_its_memory(service):
    """create_agent takes the answer, retrieval and quarantine settings, and set_curation changes retrieval and
    quarantine later (the fields given; the others stay), each refusal said as every tool says one."""
    from service.mcp import Service, create_agent, set_curation

    url, key = service
    tool = Service(url, key)
    answer = {"type": "number", "minimum": 0, "maximum": 10}

    async def main():
        made = await create_agent(
            tool, "curated", answer=answer, retrieval="similarity", quarantine={"enabled": True, "level": 0.01}
        )
        assert made["answer"]["type"] == "number" and made["retrieval"] == "similarity"
        assert made["quarantine"]["enabled"] and made["quarantine"]["level"] == 0.01
        changed = await set_curation(tool, made["id"], quarantine={"enabled": False})
        assert not changed["quarantine"]["enabled"] and changed["quarantine"]["level"] == 0.01
        assert changed["retrieval"] == "similarity"
        changed = await set_curation(tool, made["id"], retrieval="value_aware")
        assert changed["retrieval"] == "value_aware" and not changed["quarantine"]["enabled"]
        with pytest.raises(ValueError, match="^retrieval, quarantine: give at least one setting to change$"):
            await set_curation(tool, made["id"])
        with pytest.raises(ValueError, match=r"^memtrial refused \(422 invalid\): .*\(field: retrieval\)$"):
            await set_curation(tool, made["id"], retrieval="by_mood")

    asyncio.run(main())


def test_a_tool_whose_service_does_not_answer_names_the_service_it_called():
    from service.mcp import Service, list_agents

    with pytest.raises(ValueError) as failed:
        asyncio.run(list_agents(Service("http://127.0.0.1:9", "mt_x")))  # nothing listens there
    assert str(failed.value).startswith("the memtrial service at http://127.0.0.1:9 did not answer (")
    assert str(failed.value).endswith("is it running there? (memtrial mcp --url, or MEMTRIAL_URL)")
