"""Schema fuzzing: every operation of the service's own OpenAPI schema, authenticated, on SQLite.

Generated requests must never produce a 5xx, and every answer must conform to
the schema (status codes, content types, response bodies). The number of
examples per operation is MEMTRIAL_FUZZ_EXAMPLES (default 15 in the suite).
"""

import os

import schemathesis
from schemathesis import checks
from conftest import make_tenant
from hypothesis import HealthCheck, given, settings

MAX_EXAMPLES = int(os.environ.get("MEMTRIAL_FUZZ_EXAMPLES", "15"))


def test_no_operation_answers_5xx_or_breaks_its_schema(tmp_path, capsys):
    from service.app import create_app
    from service.migrations import upgrade
    from service.settings import Settings

    url = f"sqlite:///{tmp_path / 'fuzz.db'}"
    upgrade(url)
    key = make_tenant(url, "fuzz")
    app = create_app(Settings(database_url=url, preload_model=False))
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
        print(f"\nschema fuzzing: {len(operations)} operations, {calls} generated requests, no 5xx, no schema violation")
    assert len(operations) >= 20


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
                assert operation["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")
    with TestClient(app) as http:
        response = http.get("/v1/agents/0", headers={"Authorization": f"Bearer {key}"})
        metrics = http.get("/metrics")
    assert response.status_code == 404 and response.json()["error"]["field"] == "agent_id"
    assert metrics.headers["content-type"].startswith("text/plain")
