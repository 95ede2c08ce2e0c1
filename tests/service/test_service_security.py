"""Service: safe headers on every answer, and a 401 that says how to authenticate."""


def test_every_answer_carries_safe_headers_and_401_says_how_to_authenticate(http):
    answer = http.get("/v1/agents")
    assert answer.status_code == 401 and answer.headers["WWW-Authenticate"].startswith("Bearer")
    for response in (answer, http.get("/healthz"), http.get("/dashboard/x")):
        assert (
            response.headers["X-Content-Type-Options"] == "nosniff"
            and response.headers["Referrer-Policy"] == "no-referrer"
        )
