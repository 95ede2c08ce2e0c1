"""A small OpenAI-compatible chat server on 127.0.0.1 for tests (the real HTTP path of litellm).

Answers ``POST /v1/chat/completions`` with weights over the assets listed in
the prompt, derived from a hash of the prompt, so drafts differ by subset and
repeat exactly. ``delay`` makes each answer slow (to observe concurrency and timeouts);
``malformed`` makes every answer unusable; ``partial`` cuts every answer's
JSON short; ``flaky`` answers malformed and valid in turn (first malformed);
``status`` answers every call with that HTTP status and ``error_body``;
``hold`` (an event) keeps every answer until it is set (a request caught mid-drafting); ``follow``
answers an even book tilted toward each asset a lesson in the prompt says to overweight ("Overweight TLT:
..."), so a draft depends on its lessons as a model's would.
A scored prompt (one that asks for a forecast, a number or a choice) is answered
in the form it asks for.
Every request body is kept in ``requests`` and its headers in ``headers``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    """Room for every draft of a decision at once: a server decision sends up to 256 calls together, and
    with the standard backlog of 5 the connections past it wait out TCP's retransmission (1 s, then 3 s...)."""

    request_queue_size = 256


class FakeLLM:
    def __init__(
        self,
        delay: float = 0.0,
        malformed: bool = False,
        partial: bool = False,
        flaky: bool = False,
        status: int = 200,
        error_body: str = "",
        hold: threading.Event | None = None,
        follow: bool = False,
    ) -> None:
        self.delay, self.malformed, self.partial, self.flaky = delay, malformed, partial, flaky
        self.status, self.error_body, self.hold, self.follow = status, error_body, hold, follow
        self.requests: list[dict[str, object]] = []
        self.headers: list[dict[str, str]] = []
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, prompt: str, call: int) -> str:
        if self.malformed or (self.flaky and call % 2 == 1):
            return "I would rather not say."
        form = re.search(r"Answer with the JSON object (.*)\. Return the JSON object only\.", prompt)
        if form is not None:  # a scored draft: answer in the form the prompt asks for
            text = self.scored(form.group(1), hashlib.sha256(prompt.encode()).digest())
            return text[: len(text) // 2] if self.partial else text
        assets = re.findall(r"^- (\S+) \(", prompt, re.MULTILINE)
        digest = hashlib.sha256(prompt.encode()).digest()
        raw = [1 + digest[i % len(digest)] for i in range(len(assets))]
        if self.follow:
            raw = [2 + 3 * len(re.findall(rf"Overweight {re.escape(a)}\b", prompt)) for a in assets]
        text = json.dumps({"weights": {a: r / sum(raw) for a, r in zip(assets, raw, strict=True)}})
        return text[: len(text) // 2] if self.partial else text

    @staticmethod
    def scored(form: str, digest: bytes) -> str:
        """A forecast, a number or a choice, as the form asks, derived from the prompt's hash."""
        quoted = [json.loads(q) for q in re.findall(r'"(?:[^"\\]|\\.)*"', form)]
        if form.startswith('{"probabilities"'):
            outcomes = [q for q in quoted if q != "probabilities"]
            raw = [1 + digest[i % len(digest)] for i in range(len(outcomes))]
            return json.dumps({"probabilities": {o: r / sum(raw) for o, r in zip(outcomes, raw, strict=True)}})
        if "one finite number" in form:
            low = re.search(r"at least (-?[0-9.e+]+)", form)
            high = re.search(r"at most (-?[0-9.e+]+)", form)
            lo = float(low.group(1)) if low else 0.0
            hi = float(high.group(1)) if high else lo + 100.0
            return json.dumps({"answer": lo + (hi - lo) * digest[0] / 255})
        if "exactly one of" in form:
            choices = [q for q in quoted if q != "answer"]
            return json.dumps({"answer": choices[digest[0] % len(choices)]})
        return json.dumps({"answer": f"answer {digest[:4].hex()}"})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length))
                with fake._lock:
                    fake.calls += 1
                    call = fake.calls
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers.items()))
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    if fake.hold is not None:
                        fake.hold.wait(timeout=300)
                    # a slow model on purpose: the latency is what the tests that set `delay` exercise
                    time.sleep(fake.delay)
                    content = fake.answer(body["messages"][-1]["content"], call)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1
                reply = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "fake"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                }
                data = json.dumps(reply).encode() if fake.status == 200 else fake.error_body.encode()
                try:
                    self.send_response(fake.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout under test)

        return Handler


if __name__ == "__main__":
    # `python tests/fake_llm.py [--follow]`: serve on a free 127.0.0.1 port until stopped; the first line
    # printed is the OpenAI-compatible base URL (for agents in other languages that use it as their stand-in model)
    import sys

    fake = FakeLLM(follow="--follow" in sys.argv[1:])
    print(fake.api_base, flush=True)
    try:
        fake.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        fake.server.server_close()
