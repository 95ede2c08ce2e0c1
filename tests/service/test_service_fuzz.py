"""Schema fuzzing: every operation of the service's own OpenAPI schema, authenticated, on SQLite.

Generated requests must never produce a 5xx, and every answer must conform to
the schema (status codes, content types, response bodies). Two runs:

- each operation alone, MEMTRIAL_FUZZ_EXAMPLES examples each (default 15);
- stateful sequences that feed what one call creates (agents, experiences,
  decisions, jobs) into the next, MEMTRIAL_FUZZ_STATEFUL_EXAMPLES sequences of up
  to 10 calls (default 20).

The long run (over 10,000 requests)::

    MEMTRIAL_FUZZ_EXAMPLES=300 MEMTRIAL_FUZZ_STATEFUL_EXAMPLES=900 python -m pytest tests/service/test_service_fuzz.py -s
"""

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks
from support import make_tenant

pytestmark = pytest.mark.slow  # schema fuzzing belongs to the slow tier

MAX_EXAMPLES = int(os.environ.get("MEMTRIAL_FUZZ_EXAMPLES", "15"))
STATEFUL_EXAMPLES = int(os.environ.get("MEMTRIAL_FUZZ_STATEFUL_EXAMPLES", "20"))


def fuzz_app(tmp_path, name):
    from service.app import create_app
    from service.migrations import upgrade
    from service.settings import Settings

    url = f"sqlite:///{tmp_path / f'{name}.db'}"
    upgrade(url)
    key = make_tenant(url, "fuzz")
    # requests without a key are part of the checks: do not rate-limit them; keep background refits few
    app = create_app(Settings(database_url=url, preload_model=False, auth_failures_per_minute=0, refit_queue_size=1))
    return app, key


def test_no_operation_answers_5xx_or_breaks_its_schema(tmp_path, capsys):
    app, key = fuzz_app(tmp_path, "fuzz")
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    headers = {"Authorization": f"Bearer {key}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    calls = 0
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def run(case):
            nonlocal calls
            calls += 1
            # semantic rules (a feasible mandate, weights summing to 1, time order) are not expressible in
            # OpenAPI, so a schema-valid body may rightly get 422: that one check is left out
            case.call_and_validate(headers=headers, excluded_checks=[checks.positive_data_acceptance])

        run()
    with capsys.disabled():
        print(
            f"\nschema fuzzing: {len(operations)} operations, {calls} generated requests, no 5xx, no schema violation"
        )
    assert len(operations) >= 20


def test_stateful_sequences_never_answer_5xx_or_break_the_schema(tmp_path, capsys):
    from fastapi.testclient import TestClient

    app, key = fuzz_app(tmp_path, "stateful")
    with TestClient(app) as http:  # the app's lifespan (background threads) runs for the whole test
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)

        # the key as the schema's own auth provider, not a header passed beside the case: the checks then know
        # the request carried valid credentials, and a case generated without the header is judged as sent
        @schema.auth(refresh_interval=None)
        class Key:
            def get(self, case, context):
                return key

            def set(self, case, data, context):
                case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}

        machine = schema.as_state_machine()
        produced = {name.split(" -> ")[0] for name in machine.bundles}
        assert {
            "POST /v1/agents",
            "POST /v1/agents/{agent_id}/experiences",
            "POST /v1/agents/{agent_id}/decisions",
        } <= produced
        calls = 0

        class Sequences(machine):  # type: ignore[misc, valid-type]
            def setup(self):
                # every sequence starts from an empty tenant: what links draw from earlier answers must not
                # depend on what previous sequences left behind (Hypothesis replays sequences to shrink them)
                auth = {"Authorization": f"Bearer {key}"}
                while agents := http.get("/v1/agents", params={"limit": 200}, headers=auth).json()["items"]:
                    for agent in agents:
                        assert http.delete(f"/v1/agents/{agent['id']}", headers=auth).status_code == 204

            def after_call(self, response, case):
                nonlocal calls
                calls += 1

            def validate_response(self, response, case, **kwargs):
                case.validate_response(response, excluded_checks=[checks.positive_data_acceptance])

        Sequences.run(
            settings=settings(
                max_examples=STATEFUL_EXAMPLES,
                stateful_step_count=10,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
            )
        )
    with capsys.disabled():
        print(f"\nstateful fuzzing: {STATEFUL_EXAMPLES} sequences, {calls} requests, no 5xx, no schema violation")
    assert calls >= STATEFUL_EXAMPLES


def test_cases_found_by_fuzzing_stay_fixed(tmp_path):
    """Regressions of what fuzzing found: /metrics was documented as JSON, and error statuses
    (404 for unknown ids among them) were missing from every operation of the schema."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.migrations import upgrade
    from service.settings import Settings

    url = f"sqlite:///{tmp_path / 'regress.db'}"
    upgrade(url)
    key = make_tenant(url, "regress")
    app = create_app(Settings(database_url=url, preload_model=False))
    document = app.openapi()
    assert list(document["paths"]["/metrics"]["get"]["responses"]["200"]["content"]) == ["text/plain"]
    for path, operations in document["paths"].items():
        if path.startswith("/v1/"):
            for method, operation in operations.items():
                for status in ("401", "404", "409", "422"):
                    assert status in operation["responses"], (method, path, status)
                assert operation["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith(
                    "/ErrorBody"
                )
    with TestClient(app) as http:
        response = http.get("/v1/agents/0", headers={"Authorization": f"Bearer {key}"})
        metrics = http.get("/metrics")
    assert response.status_code == 404 and response.json()["error"]["field"] == "agent_id"
    assert metrics.headers["content-type"].startswith("text/plain")
