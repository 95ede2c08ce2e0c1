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
