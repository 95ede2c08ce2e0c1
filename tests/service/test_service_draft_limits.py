"""Service: the operator's limit on drafts per decision (MEMTRIAL_MAX_DRAFTS_PER_DECISION) and what server
drafting may send: every accepted setting completes, retries are paid from the limit and the draft budget."""

import datetime as dt
import json

import pytest
from fake_llm import FakeLLM
from support import UNIVERSE, make_tenant

from memtrial.credit.design import max_drafts
from service.client import MemtrialClient, ServiceError

START = dt.datetime(2021, 1, 29, 21, 0, tzinfo=dt.UTC)
LESSONS = [
    f"lesson {i}: {topic}"
    for i, topic in enumerate(["bonds", "stocks", "gold", "cash", "rates", "credit", "oil", "yen"])
]
DESIGNS = ["half", "fold", "full", "saturated"]


@pytest.fixture
def serve(database_url, tmp_path):
    """serve(llm, **settings) -> a client of an app whose operator configured ``llm`` as provider ``fake``."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    opened = []

    def start(llm=None, **settings):
        config = tmp_path / "llm.json"
        api_base = "http://127.0.0.1:9/v1" if llm is None else llm.api_base
        config.write_text(json.dumps({"providers": {"fake": {"models": ["openai/fake"], "api_base": api_base}}}))
        http = TestClient(create_app(Settings(database_url=database_url, llm_config=str(config), **settings)))
        http.__enter__()
        opened.append(http)
        client = MemtrialClient(api_key=make_tenant(database_url, f"limits-{len(opened)}"), http=http)
        client.retries = 0  # one request per call: a retry after a failed drafting runs it again (its key released)
        return client

    yield start
    for http in opened:
        http.__exit__(None, None, None)


def weights(subsets):
    return [{"SPY": 0.25, "TLT": 0.25, "GLD": 0.25, "BIL": 0.25} for _ in subsets]


#: the settings that need more than 64 drafts, exactly the ones refused
REFUSED = [
    ("half", "given", 8),
    ("fold", "given", 8),
    ("fold", "memory_free", 7),
    ("fold", "memory_free", 8),
    ("full", "given", 7),
    ("full", "given", 8),
]
SETTINGS = [
    (design, reference)
    for design in DESIGNS
    for reference in (["given", "memory_free"] if design in ("fold", "saturated") else ["given"])
]


#: the smallest k of each design: a half fraction of one experience is one run, which cannot credit it
SMALLEST_K = {"half": 2, "fold": 2}


def _every_k_or_the_edges(sweep):
    """Every k of every setting (``sweep``), or each setting's edges: its smallest k, the largest k the limit
    accepts and the first it refuses."""
    for design, reference in SETTINGS:
        refused = [k for d, r, k in REFUSED if (d, r) == (design, reference)]
        first_refused = min(refused, default=9)
        smallest = SMALLEST_K.get(design, 1)
        ks = (
            range(smallest, 9)
            if sweep
            else sorted({smallest, first_refused - 1, *([first_refused] if refused else [])})
        )
        yield from ((design, reference, k) for k in ks)


def _complete_or_refused(client, llm, design, reference, k):
    """Whether the limit refuses the setting; accepted, a decision drafted by the client and one by the server."""
    try:
        agent = client.create_agent(
            f"{design}-{reference}-{k}",
            "balanced",
            UNIVERSE,
            design=design,
            k=k,
            reference=reference,
            drafter={"provider": "fake", "model": "openai/fake", "max_retries": 0},
        )
    except ServiceError as error:
        assert error.status == 422 and error.field == "k"
        assert "limit of 64 (MEMTRIAL_MAX_DRAFTS_PER_DECISION)" in error.message
        return True
    ids = [e["id"] for e in client.add_experiences(agent["id"], [{"text": t} for t in LESSONS[:k]])["items"]]
    plan = client.create_decision(agent["id"], START, START + dt.timedelta(days=28), "x", horizon=2, retrieved_ids=ids)
    decided = client.submit_drafts(agent["id"], plan["decision_id"], weights(plan["subsets"]))
    assert decided["status"] == "decided"
    later = START + dt.timedelta(days=1)
    before = llm.calls
    drafted = client.create_decision(
        agent["id"], later, later + dt.timedelta(days=28), "x", horizon=2, retrieved_ids=ids, drafting="server"
    )
    assert drafted["status"] == "decided" and llm.calls - before == len(drafted["drafts"]) <= 64
    return False


@pytest.mark.parametrize(
    "sweep",
    [
        False,  # each setting's edges: the fast tier
        pytest.param(True, marks=pytest.mark.slow),  # every k of every setting
    ],
    ids=["edges", "every k"],
)
def test_every_design_and_k_the_limit_accepts_completes_a_decision_by_client_and_by_server(serve, sweep):
    with FakeLLM() as llm:
        client = serve(llm)
        tried = list(_every_k_or_the_edges(sweep))
        refused = [setting for setting in tried if _complete_or_refused(client, llm, *setting)]
    # exactly the settings that need more than 64 drafts are refused
    assert refused == [setting for setting in REFUSED if setting in tried]
    assert len(refused) == (len(REFUSED) if sweep else 4)
    assert all(max_drafts(d, k, extra_reference=r == "memory_free") > 64 for d, r, k in REFUSED)
    assert all(
        max_drafts(d, k, extra_reference=r == "memory_free") <= 64 for d, r, k in tried if (d, r, k) not in refused
    )


def test_the_drafts_request_and_the_settings_follow_the_operators_limit(serve):
    wide = serve(max_drafts_per_decision=128)
    agent = wide.create_agent("wide", "balanced", UNIVERSE, design="full", k=7)
    ids = [e["id"] for e in wide.add_experiences(agent["id"], [{"text": t} for t in LESSONS[:7]])["items"]]
    plan = wide.create_decision(agent["id"], START, START + dt.timedelta(days=28), "x", horizon=2, retrieved_ids=ids)
    assert len(plan["subsets"]) == 128
    assert wide.submit_drafts(agent["id"], plan["decision_id"], weights(plan["subsets"]))["status"] == "decided"

    narrow = serve(max_drafts_per_decision=16)
    with pytest.raises(ServiceError) as error:
        narrow.create_agent("five", "balanced", UNIVERSE, design="full", k=5)
    assert (error.value.status, error.value.field) == (422, "k")
    assert error.value.message == (
        "k: design 'full' with k = 5 needs up to 32 drafts per decision, more than this server's limit of 16 "
        "(MEMTRIAL_MAX_DRAFTS_PER_DECISION); choose a smaller k or another design"
    )
    small = narrow.create_agent("four", "balanced", UNIVERSE)
    plan = narrow.create_decision(small["id"], START, START + dt.timedelta(days=28), "x", horizon=2)
    with pytest.raises(ServiceError) as error:
        narrow.submit_drafts(small["id"], plan["decision_id"], weights(range(17)))
    assert (error.value.status, error.value.field) == (422, "drafts")
    assert error.value.message == (
        "drafts: a decision takes at most 16 drafts on this server (MEMTRIAL_MAX_DRAFTS_PER_DECISION), got 17"
    )


def test_an_agent_made_under_a_larger_limit_is_refused_when_it_plans_or_takes_a_drafter(serve, database_url):
    wide = serve(max_drafts_per_decision=128)
    agent = wide.create_agent("wide", "balanced", UNIVERSE, design="half", k=8)
    narrow = MemtrialClient(api_key=wide._headers["Authorization"].split()[1], http=serve()._http)
    for attempt in (
        lambda: narrow.create_decision(agent["id"], START, START + dt.timedelta(days=28), "x", horizon=2),
        lambda: narrow._request(
            "PATCH", f"/v1/agents/{agent['id']}", {"drafter": {"provider": "fake", "model": "openai/fake"}}
        ),
    ):
        with pytest.raises(ServiceError) as error:
            attempt()
        assert (error.value.status, error.value.field) == (422, "k")
        assert "needs up to 128 drafts per decision, more than this server's limit of 64" in error.value.message
    assert narrow.list_decisions(agent["id"])["items"] == []


def test_a_limit_outside_one_to_256_stops_the_start_naming_the_variable():
    from service.settings import Settings

    for value in (0, 257):
        with pytest.raises(ValueError, match=rf"MEMTRIAL_MAX_DRAFTS_PER_DECISION must be in \[1, 256\], got {value}"):
            Settings(max_drafts_per_decision=value)


def test_server_drafting_sends_at_most_the_limit_of_calls_for_one_decision_retries_included(serve):
    with FakeLLM(malformed=True) as llm:
        client = serve(llm, max_drafts_per_decision=20)
        agent = client.create_agent(
            "llm", "balanced", UNIVERSE, drafter={"provider": "fake", "model": "openai/fake", "max_retries": 5}
        )
        client.add_experiences(agent["id"], [{"text": t} for t in LESSONS[:4]])
        with pytest.raises(ServiceError) as error:
            client.create_decision(agent["id"], START, START + dt.timedelta(days=28), "x", drafting="server")
    assert (error.value.status, error.value.code) == (502, "malformed_draft")
    assert llm.calls == 20  # the eight drafts and twelve retries, not 8 * 6
    assert error.value.message.endswith(
        "no retry was left: this server sends at most 20 calls for one decision (MEMTRIAL_MAX_DRAFTS_PER_DECISION)"
    )


def within(calls, budget, horizon, n):
    """The budget's bound on the calls of n decisions: B * n, plus what a horizon H lends, (B - 1) * (H - n)."""
    return calls <= budget * n + (0 if horizon is None else (budget - 1) * max(horizon - n, 0)) + 1e-9


@pytest.mark.parametrize(
    ("budget", "horizon", "mode"),
    [(1, None, "malformed"), (2, None, "malformed"), (3, None, "flaky"), (2, 6, "malformed"), (3, 5, "flaky")],
)
def test_every_call_a_provider_receives_is_paid_from_the_draft_budget_retries_included(serve, budget, horizon, mode):
    with FakeLLM(**{mode: True}) as llm:
        client = serve(llm)
        agent = client.create_agent(
            "llm",
            "balanced",
            UNIVERSE,
            draft_budget=budget,
            draft_horizon=horizon,
            drafter={"provider": "fake", "model": "openai/fake", "max_retries": 5},
        )
        client.add_experiences(agent["id"], [{"text": t} for t in LESSONS[:4]])
        outcomes = []
        for n in range(1, 7):
            when = START + dt.timedelta(days=30 * n)
            try:
                decision = client.create_decision(
                    agent["id"], when, when + dt.timedelta(days=28), f"month {n}", drafting="server", horizon=2
                )
                outcomes.append("decided")
                client.settle(
                    agent["id"], decision["decision_id"], returns={a["asset"]: [0.001, 0.0] for a in UNIVERSE}
                )
            except ServiceError as error:
                assert error.code == "malformed_draft"
                outcomes.append("failed")
            assert within(llm.calls, budget, horizon, n), (llm.calls, n)
    log = client.trust_log(agent["id"], limit=1000)["items"]
    logged = sum(
        e["payload"]["details"]["draft_calls"] if e["kind"] == "prediction" else e["payload"]["draft_calls"]
        for e in log
        if e["kind"] in ("prediction", "exploit", "retry")
    )
    assert logged == llm.calls  # the log accounts for every call the providers received
    assert client.verify(agent["id"])["ok"]
    if mode == "flaky":  # retries were made where the credit allowed them, and decisions completed
        assert "decided" in outcomes and any(e["kind"] == "retry" for e in log)


def test_a_utility_bound_outside_what_the_engine_learns_from_stops_the_start_naming_the_variable():
    from service.settings import Settings

    for value in (0.0, 1e101, float("inf"), float("nan")):
        with pytest.raises(ValueError, match=r"MEMTRIAL_MAX_ABS_UTILITY must be in \(0, 1e\+100\], got"):
            Settings(max_abs_utility=value)
    assert Settings(max_abs_utility=1e100).max_abs_utility == 1e100


@pytest.mark.parametrize(
    "variable,raw,bounds",
    [
        ("MEMTRIAL_MAX_CLOCK_SKEW_SECONDS", "99999999999999999999", "[0, 31536000]"),  # then 500 on every plan
        ("MEMTRIAL_IDEMPOTENCY_HOURS", "1e300", "[1, 87600]"),  # then every heartbeat failed, its chores unrun
        ("MEMTRIAL_IDEMPOTENCY_HOURS", "0", "[1, 87600]"),  # then every key was dropped, its claim in progress too
        ("MEMTRIAL_REFIT_STALE_SECONDS", "0", "[1, 86400]"),  # then every refit failed as 'interrupted'
        ("MEMTRIAL_REFIT_QUEUE_SIZE", "0", "[1, 10000]"),  # then every refit was 429
    ],
)
def test_a_setting_that_would_break_what_it_governs_stops_the_start_naming_its_range(
    monkeypatch, variable, raw, bounds
):
    from service.settings import Settings

    monkeypatch.setenv(variable, raw)
    with pytest.raises(ValueError) as error:
        Settings.from_env()
    assert str(error.value).startswith(f"{variable} must be in {bounds}, got ")


@pytest.mark.parametrize(
    "variable,raw",
    [
        ("MEMTRIAL_MAX_SESSION_RETURN", "nan"),
        ("MEMTRIAL_MAX_SESSION_RETURN", "inf"),
        ("MEMTRIAL_CACHE_MB", "nan"),
        ("MEMTRIAL_IDEMPOTENCY_HOURS", "nan"),
        ("MEMTRIAL_DB_BUSY_TIMEOUT", "inf"),
        ("MEMTRIAL_DB_BUSY_TIMEOUT", "-1"),
    ],
)
def test_a_setting_that_is_not_a_finite_number_stops_the_start_naming_the_variable(monkeypatch, variable, raw):
    """NaN passed a ">= 0" check: the service started, then refused every settlement ("above the plausible
    nan a session")."""
    from service.settings import Settings

    monkeypatch.setenv(variable, raw)
    with pytest.raises(ValueError) as error:
        Settings.from_env()
    assert str(error.value) == f"{variable} must be a finite number >= 0, got {float(raw)!r}"
