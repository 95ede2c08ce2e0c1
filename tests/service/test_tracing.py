"""OpenTelemetry traces: ``memtrial serve`` sends a span per request, with children for the database, the
embedding, retrieval, the engine and each LLM call, over OTLP/HTTP to a local collector stand-in."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from support import UNIVERSE, make_tenant

pytest.importorskip("opentelemetry.sdk", reason="TRACES NOT TESTED: the otel extra is not installed")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from service.client import MemtrialClient  # noqa: E402

pytestmark = pytest.mark.slow  # a live server


class Collector:
    """An OTLP/HTTP endpoint on 127.0.0.1 that keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[dict[str, object]] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with collector.lock:
                    for resource in request.resource_spans:
                        service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
                        for scope in resource.scope_spans:
                            for span in scope.spans:
                                collector.spans.append(
                                    {
                                        "name": span.name,
                                        "trace": span.trace_id.hex(),
                                        "id": span.span_id.hex(),
                                        "parent": span.parent_span_id.hex(),
                                        "service": service,
                                        "attributes": {a.key: str(a.value) for a in span.attributes},
                                        "path": self.path,
                                    }
                                )
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def wait_for(self, predicate, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if predicate(self.spans):
                    return list(self.spans)
            time.sleep(0.1)
        raise AssertionError(f"spans never arrived: {[s['name'] for s in self.spans]}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def descendants(spans, root):
    children = {}
    for span in spans:
        children.setdefault(span["parent"], []).append(span)
    found, todo = [], [root["id"]]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child["id"])
    return found


def test_requests_are_traced_with_their_database_embedding_retrieval_engine_and_llm_spans(tmp_path):
    from fake_llm import FakeLLM
    from live_server import Server

    collector = Collector()
    llm = FakeLLM().__enter__()
    config = tmp_path / "llm.json"
    config.write_text(json.dumps({"providers": {"fake": {"models": ["openai/fake"], "api_base": llm.api_base}}}))
    url = f"sqlite:///{tmp_path / 'traces.db'}"
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_SERVICE_NAME": "memtrial-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "MEMTRIAL_LLM_CONFIG": str(config),
    }
    server = Server(url, env=env)
    try:
        with MemtrialClient(server.url, make_tenant(url, "traced")) as client:
            agent = client.create_agent(
                "fund", "balanced", UNIVERSE, drafter={"provider": "fake", "model": "openai/fake"}
            )
            client.add_experiences(agent.id, ["Bonds rallied on cuts.", "Gold held up.", "Cash waited.", "Stocks ran."])
            trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
            client._http.headers["traceparent"] = f"00-{trace_id}-00f067aa0ba902b7-01"
            client.create_decision(
                agent.id, "2021-01-29T21:00:00Z", "2021-02-26T21:00:00Z", "rates fell", drafting="server"
            )
        route = "POST /v1/agents/{agent_id}/decisions"
        spans = collector.wait_for(lambda spans: any(s["name"] == route for s in spans))
        spans = collector.wait_for(lambda spans: sum(s["name"] == "llm.completion" for s in spans) >= 8)
    finally:
        server.stop()
        llm.__exit__(None, None, None)
        collector.close()
    root = next(s for s in spans if s["name"] == route)
    assert root["trace"] == trace_id and root["parent"] == "00f067aa0ba902b7"  # joined the caller's trace
    assert root["service"] == "memtrial-under-test" and root["path"] == "/v1/traces"
    assert root["attributes"]["http.route"].endswith('"/v1/agents/{agent_id}/decisions"\n')
    assert "int_value: 201" in root["attributes"]["http.response.status_code"]
    below = [s["name"] for s in descendants(spans, root)]
    for name in ("db.transaction", "embedding.encode", "retrieval.search", "engine.plan", "engine.decide"):
        assert name in below, (name, below)
    assert below.count("llm.completion") == 8  # one per designed subset
    assert {s["name"] for s in spans} >= {"POST /v1/agents", "POST /v1/agents/{agent_id}/experiences"}


def test_server_log_with_the_collector_unreachable_is_json_on_every_line(tmp_path):
    from live_server import Server, free_port

    closed = free_port()  # nothing listens there: every export fails
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{closed}", "OTEL_BSP_SCHEDULE_DELAY": "100"}
    server = Server(f"sqlite:///{tmp_path / 'unreachable.db'}", env=env)
    try:
        for _ in range(3):
            assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
        deadline = time.monotonic() + 60
        while '"logger": "opentelemetry' not in server.output():  # the exporter has said it cannot send
            assert time.monotonic() < deadline, server.output()[-3000:]
            time.sleep(0.2)
    finally:
        output = server.stop()
    lines = [line for line in output.splitlines() if line.strip()]
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"a log line that is not JSON: {line[:300]!r}") from None
    assert all(isinstance(record, dict) and {"time", "level", "logger", "message"} <= set(record) for record in records)
    assert any(record["logger"].startswith("opentelemetry") for record in records)
    assert any(record["message"].startswith("memtrial service on http://127.0.0.1:") for record in records)
    # the line that says tracing is on names where spans go (its endpoint was dropped from the JSON)
    assert [r.get("endpoint") for r in records if r["message"] == "tracing"] == [f"http://127.0.0.1:{closed}"]
