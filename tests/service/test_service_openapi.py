"""Service: the API reference declares its security and errors and works offline."""

import re

import httpx
import pytest
from test_dashboard import BROWSER

METHODS = ("get", "put", "post", "delete", "patch")


def test_openapi_declares_bearer_security_and_every_error(http):
    schema = http.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["HTTPBearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schema["components"]["securitySchemes"]["HTTPBearer"]["description"],
    }
    operation = schema["paths"]["/v1/agents/{agent_id}/experiences"]["post"]
    assert {"HTTPBearer": []} in operation["security"]
    assert {"401", "404", "409", "422", "429", "503"} <= set(operation["responses"])
    assert any(p["name"] == "Idempotency-Key" for p in operation["parameters"])


def test_docs_load_swagger_ui_from_the_package_not_a_cdn(http):
    page = http.get("/docs").text
    assert "/docs/assets/swagger-ui-bundle.js" in page and "/docs/assets/swagger-ui.css" in page
    assert "cdn" not in page.lower() and "https://" not in page.split("<body>")[1]
    script = http.get("/docs/assets/swagger-ui-bundle.js")
    assert script.status_code == 200 and len(script.content) > 100_000
    assert http.get("/redoc").status_code == 404
    # the page runs the service's own scripts only (no inline one) and no other site may frame it
    policy = http.get("/docs").headers["content-security-policy"]
    assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    assert page.count("<script") == page.count('<script src="/') == 2
    assert http.get("/static/api-docs.js").status_code == 200


@pytest.mark.skipif(
    BROWSER is None, reason="CHROMIUM NOT INSTALLED: the API reference is not rendered (apt-get install chromium)"
)
@pytest.mark.slow  # a live server and a real browser
def test_the_api_reference_renders_every_operation_in_headless_chromium_under_its_policy(tmp_path):
    """/docs served Swagger UI 4, which cannot read an OpenAPI 3.1 document: the page said "Unable to render this
    definition" and listed nothing. Every operation must show, and the page's policy must refuse nothing."""
    import subprocess

    from live_server import Server

    server = Server(f"sqlite:///{tmp_path / 'docs.db'}", ready_path="/healthz")
    try:
        schema = httpx.get(f"{server.url}/openapi.json").json()
        assert schema["openapi"].startswith("3.1")
        operations = [(m.upper(), p) for p, item in schema["paths"].items() for m in item if m in METHODS]
        browser = subprocess.run(
            [
                BROWSER,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--virtual-time-budget=15000",
                f"--user-data-dir={tmp_path / 'profile'}",
                "--enable-logging=stderr",
                "--log-level=0",  # the page's console, where a refusal by its policy is reported
                "--dump-dom",
                f"{server.url}/docs",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    finally:
        server.stop()
    dom = browser.stdout
    assert "Unable to render this definition" not in dom
    shown = re.findall(r'class="opblock-summary-method">(\w+)</span>.*?data-path="([^"]+)"', dom)
    assert sorted(shown) == sorted(operations), (len(shown), len(operations))
    console = [line for line in browser.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if "Content Security Policy" in line], console


def _referenced(schema: object) -> set[str]:
    """The component schemas a piece of the description names, directly."""
    if isinstance(schema, dict):
        found = {schema["$ref"].rsplit("/", 1)[1]} if "$ref" in schema else set()
        return found.union(*(_referenced(v) for v in schema.values()))
    if isinstance(schema, list):
        return set().union(*(_referenced(v) for v in schema))
    return set()


def test_every_field_of_an_answer_is_required_as_every_answer_sends_it(http):
    """An answer sends every field of its model, a defaulted one too (null where it has none): the
    description marks each required, so a generated client (the TypeScript types) reads them as always
    there, not as possibly missing."""
    schema = http.get("/openapi.json").json()
    components = schema["components"]["schemas"]
    answers: set[str] = set()
    pending = _referenced([op["responses"] for path in schema["paths"].values() for op in path.values()])
    while pending:
        name = pending.pop()
        if name not in answers:
            answers.add(name)
            pending |= _referenced(components[name])
    assert {"ValueEntryPublic", "ExperiencePublic", "DecisionPublic", "ErrorDetail"} <= answers
    missing = {
        name: sorted(set(components[name].get("properties", {})) - set(components[name].get("required", [])))
        for name in answers
    }
    assert {name: fields for name, fields in missing.items() if fields} == {}
    # a valued experience has its row (deleting one forgets its value too): never a null text or status
    entry = components["ValueEntryPublic"]["properties"]
    assert entry["text"] == {"type": "string", "title": "Text", "description": "the experience's text"}
    assert "anyOf" not in entry["status"] and "anyOf" not in entry["active"]


def test_every_bound_is_written_in_json_schema_words_so_readers_and_generated_clients_see_it(http):
    """A bound on a field that may be null was written as pydantic's own "ge"/"le" (draft_budget, a
    quarantine's clip), which no JSON Schema reader knows; bounds are minimum, maximum and their exclusive forms."""
    schema = http.get("/openapi.json").json()
    raw_words: list[str] = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            raw_words.extend(f"{path}: {word}" for word in ("ge", "gt", "le", "lt") if word in node)
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}/{index}")

    walk(schema["components"]["schemas"], "")
    assert raw_words == []
    budget = schema["components"]["schemas"]["AgentCreate"]["properties"]["draft_budget"]["anyOf"][0]
    assert (budget["minimum"], budget["maximum"]) == (1, 16)
