"""Service: the API reference declares its security and errors and works offline."""


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
