// The client's own checks and its reading of answers, against a tiny HTTP peer on 127.0.0.1 that this file starts
// (no service): options out of range, bodies JSON cannot carry, request paths, redirects, answers that are not
// JSON, and cancelling a call.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";
import { MemtrialClient, MemtrialError, callOf, operations } from "../dist/index.js";

/** A peer on the first free port of 18500-18599 whose answers `handle(req, res, body)` writes; records each request. */
async function startPeer(handle) {
  const seen = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      seen.push({ method: req.method, path: req.url, key: req.headers["idempotency-key"] ?? null, body, at: Date.now() });
      handle(req, res, body);
    });
  });
  for (let port = 18500; port < 18600; port++) {
    const listening = await new Promise((resolve, reject) => {
      server.once("error", (error) => (error.code === "EADDRINUSE" ? resolve(false) : reject(error)));
      server.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (listening) break;
    server.removeAllListeners("error");
  }
  if (!server.listening) throw new Error("no free port in 18500-18599");
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const json = (res, status, value, headers = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(value));
};

/** A client whose fetch only counts what it is asked to send (answering 200 `{}`). */
function counting(options = {}) {
  const sent = [];
  const fetch = async (url, init) => {
    sent.push({ url, init });
    return new Response("{}", { status: 200, headers: { "content-type": "application/json" } });
  };
  return { client: new MemtrialClient({ baseUrl: "http://127.0.0.1:18599", fetch, ...options }), sent };
}

describe("options", () => {
  test("a numeric option out of its range is a TypeError naming the option, the rule and the value", () => {
    const cases = [
      ["retries", NaN, "retries must be an integer >= 0, got NaN"],
      ["retries", -1, "retries must be an integer >= 0, got -1"],
      ["retries", 1.5, "retries must be an integer >= 0, got 1.5"],
      ["retries", "2", 'retries must be an integer >= 0, got "2"'],
      ["retries", null, "retries must be an integer >= 0, got null"],
      ["maxWaitMs", NaN, "maxWaitMs must be a number of ms from 0 to 2147483647, got NaN"],
      ["maxWaitMs", -1, "maxWaitMs must be a number of ms from 0 to 2147483647, got -1"],
      ["maxWaitMs", Infinity, "maxWaitMs must be a number of ms from 0 to 2147483647, got Infinity"],
      ["inProgressWaitMs", NaN, "inProgressWaitMs must be a finite number of ms >= 0, got NaN"],
      ["inProgressWaitMs", -5, "inProgressWaitMs must be a finite number of ms >= 0, got -5"],
      ["timeoutMs", NaN, "timeoutMs must be an integer number of ms from 1 to 2147483647, got NaN"],
      ["timeoutMs", -5, "timeoutMs must be an integer number of ms from 1 to 2147483647, got -5"],
      ["timeoutMs", 0, "timeoutMs must be an integer number of ms from 1 to 2147483647, got 0"],
      ["timeoutMs", 1.5, "timeoutMs must be an integer number of ms from 1 to 2147483647, got 1.5"],
      ["timeoutMs", 2 ** 31, "timeoutMs must be an integer number of ms from 1 to 2147483647, got 2147483648"],
    ];
    for (const [name, value, message] of cases) {
      assert.throws(() => new MemtrialClient({ baseUrl: "http://127.0.0.1:8000", [name]: value }), { name: "TypeError", message }, `${name}: ${value}`);
    }
  });

  test("numeric options at their bounds are kept; undefined is the default", () => {
    const client = new MemtrialClient({ baseUrl: "http://127.0.0.1:8000", retries: 0, maxWaitMs: 0, inProgressWaitMs: 0, timeoutMs: 1 });
    assert.deepEqual([client.retries, client.maxWaitMs, client.inProgressWaitMs, client.timeoutMs], [0, 0, 0, 1]);
    const defaults = new MemtrialClient({ baseUrl: "http://127.0.0.1:8000", apiKey: undefined, retries: undefined, timeoutMs: undefined });
    assert.deepEqual([defaults.retries, defaults.maxWaitMs, defaults.inProgressWaitMs, defaults.timeoutMs], [2, 2000, 60_000, 120_000]);
  });
});

describe("requests fetch cannot build", () => {
  test("baseUrl must be the service's address: a host, no query, fragment or credentials", () => {
    const cases = [
      ["http://", "an http(s) URL"],
      ["ftp://host", "an http(s) URL"],
      ["http://127.0.0.1:8000?x=1", "the service's address, without a query or a fragment"],
      ["http://127.0.0.1:8000#top", "the service's address, without a query or a fragment"],
      ["http://user:secret@127.0.0.1:8000", "the service's address without a user or password (give the key as apiKey)"],
    ];
    for (const [baseUrl, rule] of cases) {
      assert.throws(() => new MemtrialClient({ baseUrl }), { name: "TypeError", message: `baseUrl must be ${rule}, got ${JSON.stringify(baseUrl)}` }, baseUrl);
    }
    // a proxy may serve the service under a path of its own (one that maps /api/v1/... to the service's /v1/... too)
    assert.equal(new MemtrialClient({ baseUrl: "https://example.org/memtrial/" }).baseUrl, "https://example.org/memtrial");
    assert.equal(new MemtrialClient({ baseUrl: "http://[::1]:8000" }).baseUrl, "http://[::1]:8000");
  });

  test("a header value fetch cannot send, or a GET with a body, is a TypeError and nothing is sent or retried", async () => {
    const { client, sent } = counting({ apiKey: "mt_ключ" });
    await assert.rejects(client.health(), (error) => {
      assert.equal(error.name, "TypeError");
      assert.match(error.message, /^GET \/healthz: the request cannot be built, so nothing was sent \(.+\)$/);
      return true;
    });
    await assert.rejects(client.createAgent({ name: "fund" }), { name: "TypeError" });
    const { client: plain, sent: plainSent } = counting({ headers: { "X-Request-ID": "a\nb" } });
    await assert.rejects(plain.health(), { name: "TypeError" });
    const { client: third, sent: thirdSent } = counting();
    await assert.rejects(third.request("get", "/v1/agents", { body: { a: 1 } }), { name: "TypeError" });
    assert.deepEqual([sent.length, plainSent.length, thirdSent.length], [0, 0, 0]);
  });

  test("an Idempotency-Key among the client's headers is refused; a call's own key is checked and sent", async () => {
    assert.throws(() => new MemtrialClient({ baseUrl: "http://127.0.0.1:8000", headers: { "idempotency-key": "k" } }), {
      name: "TypeError",
      message: /^headers must not hold an Idempotency-Key/,
    });
    const { client, sent } = counting();
    await client.createAgent({ name: "fund" }, { idempotencyKey: "agent-fund-1" });
    assert.equal(sent[0].init.headers["Idempotency-Key"], "agent-fund-1");
    await client.request("post", "/v1/agents", { body: { name: "fund" }, creates: true, idempotencyKey: "agent-fund-2" });
    assert.equal(sent[1].init.headers["Idempotency-Key"], "agent-fund-2");
    await assert.rejects(client.createAgent({ name: "fund" }, { idempotencyKey: "no spaces" }), {
      name: "TypeError",
      message: 'idempotencyKey must be 1 to 200 letters, digits or _ . : -, got "no spaces"',
    });
    await assert.rejects(client.getAgent("a", { idempotencyKey: "k" }), { name: "TypeError", message: /^idempotencyKey is for a creating call/ });
    assert.equal(sent.length, 2);
  });
});

describe("bodies", () => {
  test("a non-finite number anywhere in a body is a TypeError naming its dotted path, and nothing is sent", async () => {
    const { client, sent } = counting();
    await assert.rejects(client.updateAgent("a", { draft_budget: NaN }), {
      name: "TypeError",
      message: "draft_budget must be a finite number (JSON has no NaN)",
    });
    const drafts = [{ SPY: 1 }, { SPY: 0.5, TLT: 0.5 }, { TLT: 1 }, { SPY: Infinity }];
    await assert.rejects(client.submitDrafts("a", "d", { drafts }), {
      name: "TypeError",
      message: "drafts.3.SPY must be a finite number (JSON has no Infinity)",
    });
    await assert.rejects(client.settle("a", "d", { returns: { SPY: [0.01, -Infinity] } }), {
      message: "returns.SPY.1 must be a finite number (JSON has no -Infinity)",
    });
    await assert.rejects(client.request("post", "/v1/x", { body: NaN }), { message: "body must be a finite number (JSON has no NaN)" });
    assert.equal(sent.length, 0);
  });

  test("a finite body is sent as JSON writes it (toJSON, undefined fields left out)", async () => {
    const { client, sent } = counting();
    const when = new Date(Date.UTC(2024, 2, 1));
    await client.settle("a", "d", { returns: { SPY: [-0, 1e308] }, settled_at: when, outcome: undefined });
    assert.equal(sent[0].init.body, '{"returns":{"SPY":[0,1e+308]},"settled_at":"2024-03-01T00:00:00.000Z"}');
  });
});

describe("request", () => {
  test("a path without its leading / is a TypeError before anything is sent", async () => {
    const { client, sent } = counting({ retries: 2 });
    await assert.rejects(client.request("get", "v1/agents"), {
      name: "TypeError",
      message: 'path must start with "/" (the service\'s path, e.g. "/v1/agents"), got "v1/agents"',
    });
    assert.equal(sent.length, 0);
    await client.request("get", "/v1/agents");
    assert.equal(sent[0].url, "http://127.0.0.1:18599/v1/agents");
  });
});

describe("answers", () => {
  let peer;
  before(async () => {
    peer = await startPeer((req, res) => {
      const path = req.url;
      if (path.startsWith("/moved/")) {
        const status = Number(path.split("/")[2]);
        res.writeHead(status, { location: "/elsewhere" });
        res.end();
      } else if (path === "/elsewhere") {
        json(res, 200, { id: "not-the-agent", note: "what a GET of the Location answers" });
      } else if (path === "/v1/agents/html") {
        res.writeHead(200, { "content-type": "text/html" });
        res.end("<html>sign in to the proxy</html>");
      } else if (path === "/v1/agents/empty") {
        res.writeHead(200, { "content-type": "text/html" }); // a proxy's empty 200
        res.end();
      } else if (path === "/v1/agents/slash/") {
        res.writeHead(307, { location: `${peer.url}/v1/agents/slash` }); // the service's own redirect of a trailing slash
        res.end();
      } else if (path === "/v1/agents/limited") {
        json(res, 429, { error: { code: "rate_limited", message: "too many requests", field: null } }, { "retry-after": "45" });
      } else if (path === "/v1/agents/broken") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"id": "a",');
      } else if (path === "/metrics") {
        res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
        res.end("memtrial_requests_total 3\n");
      } else {
        json(res, 404, { error: { code: "not_found", message: "no such route", field: null } });
      }
    });
  });
  after(() => peer?.close());

  test("a redirect (301, 302, 303, 307) of a creating POST is a MemtrialError naming the Location; nothing is resent", async () => {
    for (const status of [301, 302, 303, 307]) {
      const before = peer.seen.length;
      const client = new MemtrialClient({ baseUrl: `${peer.url}/moved/${status}`, retries: 2, maxWaitMs: 10 });
      await assert.rejects(client.createAgent({ name: "fund", investor: "balanced" }), (error) => {
        assert.ok(error instanceof MemtrialError, String(error));
        assert.deepEqual([error.status, error.code], [status, "redirect"]);
        assert.equal(
          error.message,
          `POST /v1/agents: the service answered ${status}, a redirect to ${peer.url}/elsewhere: not followed (fetch would resend a POST as a GET), ` +
            `and nothing was resent; baseUrl (${peer.url}/moved/${status}) should point at the service itself`,
        );
        return true;
      });
      assert.deepEqual(peer.seen.slice(before).map((r) => `${r.method} ${r.path}`), [`POST /moved/${status}/v1/agents`]);
    }
  });

  test("a success that is not JSON is a MemtrialError saying what came back, not a string typed as the answer", async () => {
    const client = new MemtrialClient({ baseUrl: peer.url });
    await assert.rejects(client.getAgent("html"), (error) => {
      assert.ok(error instanceof MemtrialError, String(error));
      assert.deepEqual([error.status, error.code], [200, "not_json"]);
      assert.equal(error.message, 'GET /v1/agents/html: the service answered 200 with content-type text/html, not JSON: "<html>sign in to the proxy</html>"');
      return true;
    });
    await assert.rejects(client.getAgent("broken"), (error) => {
      assert.ok(error instanceof MemtrialError && !(error instanceof SyntaxError), String(error));
      assert.deepEqual([error.status, error.code], [200, "not_json"]);
      assert.match(error.message, /^GET \/v1\/agents\/broken: the service answered 200 with malformed JSON \(.+\): "\{\\"id\\": \\"a\\",\"$/);
      return true;
    });
    // nor is an empty success other than a 204 a null typed as the answer
    await assert.rejects(client.getAgent("empty"), (error) => {
      assert.ok(error instanceof MemtrialError, String(error));
      assert.deepEqual([error.status, error.code], [200, "not_json"]);
      assert.equal(error.message, "GET /v1/agents/empty: the service answered 200 with an empty body, not JSON");
      return true;
    });
  });

  test("a redirect of a path ending in / names the path, not baseUrl", async () => {
    const client = new MemtrialClient({ baseUrl: peer.url });
    await assert.rejects(client.request("get", "/v1/agents/slash/"), (error) => {
      assert.equal(error.code, "redirect");
      assert.match(error.message, /the service's paths take no "\/" at the end: send \/v1\/agents\/slash$/);
      return true;
    });
  });

  test("a refusal carries the wait its Retry-After named, and a creating call's error its key", async () => {
    const client = new MemtrialClient({ baseUrl: peer.url, maxWaitMs: 10 });
    await assert.rejects(client.getAgent("limited"), (error) => {
      assert.deepEqual([error.status, error.code, error.retryAfterMs, error.idempotencyKey], [429, "rate_limited", 45_000, null]);
      return true;
    });
    await assert.rejects(client.getAgent("nothing-here"), (error) => {
      assert.deepEqual([error.status, error.retryAfterMs], [404, null]);
      return true;
    });
    await assert.rejects(client.createAgent({ name: "fund", investor: "balanced" }, { idempotencyKey: "fund-1" }), (error) => {
      assert.deepEqual([error.status, error.idempotencyKey], [404, "fund-1"]);
      return true;
    });
    assert.equal(peer.seen.at(-1).key, "fund-1");
  });

  test("only a row that answers text (metrics), or request with text, answers a string", async () => {
    const client = new MemtrialClient({ baseUrl: peer.url });
    assert.equal(await client.metrics(), "memtrial_requests_total 3\n");
    assert.equal(await client.request("get", "/metrics", { text: true }), "memtrial_requests_total 3\n");
    await assert.rejects(client.request("get", "/metrics"), { code: "not_json" });
    await assert.rejects(client.request("get", "/v1/agents/html", { text: false }), { code: "not_json" });
  });
});

describe("cancelling", () => {
  let peer;
  const busy = { error: { code: "idempotency_in_progress", message: "the first request with this key is still running", field: null } };
  before(async () => {
    peer = await startPeer((req, res) => {
      const path = req.url.split("?")[0];
      if (path === "/hang") return; // never answers: the call waits until it is cancelled
      if (path === "/v1/agents" && req.method === "GET") {
        json(res, 503, { error: { code: "database_unavailable", message: "busy", field: null } }, { "retry-after": "5" });
      } else if (path === "/v1/agents" && req.method === "POST") {
        // the first attempt's answer is lost; its retry finds the first attempt still running
        const attempts = peer.seen.filter((r) => r.method === "POST").length;
        if (attempts === 1) req.socket.destroy();
        else json(res, 409, busy, { "retry-after": "5" });
      } else {
        json(res, 200, { status: "ok" });
      }
    });
  });
  after(() => peer?.close());

  const client = () => new MemtrialClient({ baseUrl: peer.url, retries: 3, maxWaitMs: 10_000, inProgressWaitMs: 60_000 });
  const arrived = async (n) => {
    while (peer.seen.length < n) await new Promise((r) => setTimeout(r, 5));
  };

  test("an aborted signal sends nothing and rejects with its reason", async () => {
    const { client: counted, sent } = counting();
    const reason = new Error("the user left");
    await assert.rejects(counted.health({ signal: AbortSignal.abort(reason) }), (error) => error === reason);
    await assert.rejects(counted.request("get", "/healthz", { signal: AbortSignal.abort() }), { name: "AbortError" });
    assert.equal(sent.length, 0);
  });

  test("aborting a call in flight rejects at once with an AbortError and sends it no more", async () => {
    const before = peer.seen.length;
    const controller = new AbortController();
    const started = Date.now();
    const call = client().request("get", "/hang", { signal: controller.signal });
    await arrived(before + 1);
    controller.abort();
    await assert.rejects(call, { name: "AbortError" });
    assert.ok(Date.now() - started < 2000, `stopped at once: ${Date.now() - started} ms`);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(peer.seen.length, before + 1, "a cancelled call is not retried");
  });

  test("aborting during the pause before a retry rejects at once with the signal's reason", async () => {
    const before = peer.seen.length;
    const controller = new AbortController();
    const started = Date.now();
    const call = client().listAgents({ limit: 1 }, { signal: controller.signal }); // 503, Retry-After 5 s
    await arrived(before + 1);
    setTimeout(() => controller.abort(new Error("stop")), 50);
    await assert.rejects(call, { message: "stop" });
    assert.ok(Date.now() - started < 2000, `did not wait the Retry-After: ${Date.now() - started} ms`);
    assert.equal(peer.seen.length, before + 1);
  });

  test("aborting while a retry waits for its first attempt rejects at once", async () => {
    const before = peer.seen.length;
    const controller = new AbortController();
    const started = Date.now();
    const call = client().createAgent({ name: "fund", investor: "balanced" }, { signal: controller.signal });
    await arrived(before + 2); // lost, then 409 idempotency_in_progress with Retry-After 5 s
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(call, { name: "AbortError" });
    assert.ok(Date.now() - started < 2000, `did not wait for the first attempt: ${Date.now() - started} ms`);
    const posts = peer.seen.slice(before);
    assert.equal(posts.length, 2);
    assert.equal(posts[0].key, posts[1].key);
  });

  test("the iterators pass the signal to every page", async () => {
    const reason = new Error("cancelled");
    await assert.rejects(client().iterAgents({}, { signal: AbortSignal.abort(reason) }).toArray(), (error) => error === reason);
    // a page size given as undefined is the iterator's own, not the service's default
    const sent = [];
    const fetch = async (url) => (sent.push(url), new Response('{"items": [], "next_cursor": null}', { headers: { "content-type": "application/json" } }));
    await new MemtrialClient({ baseUrl: "http://127.0.0.1:18599", fetch }).iterAgents({ limit: undefined, name: undefined }).toArray();
    assert.deepEqual(sent, ["http://127.0.0.1:18599/v1/agents?limit=200"]);
  });

  test("a signal of another realm (no throwIfAborted, not an AbortSignal) cancels a call in flight as a native one does", async () => {
    // a polyfill's shape: aborted, reason, addEventListener only
    const listeners = [];
    const foreign = { aborted: false, reason: undefined, addEventListener: (_, listener) => listeners.push(listener) };
    const before = peer.seen.length;
    const call = client().request("get", "/hang", { signal: foreign });
    await arrived(before + 1);
    Object.assign(foreign, { aborted: true, reason: new Error("stopped by the polyfill") });
    for (const listener of listeners) listener();
    await assert.rejects(call, { message: "stopped by the polyfill" });
    const { client: counted, sent } = counting();
    const gone = { aborted: true, reason: new Error("already"), addEventListener: () => {} };
    await assert.rejects(counted.health({ signal: gone }), { message: "already" });
    assert.equal(sent.length, 0);
  });

  test("trailing options hold only the signal: a query given to a row without one is refused, not dropped", async () => {
    const { client: counted, sent } = counting();
    await assert.rejects(counted.getAgent("a", { limit: 3 }), {
      name: "TypeError",
      message: `a call's last argument is its options, { signal, idempotencyKey }; got "limit" too`,
    });
    assert.equal(sent.length, 0);
  });

  test("options after the arguments are the call's, not its body or query; a signal must be an AbortSignal", async () => {
    const signal = new AbortController().signal;
    const retire = callOf(operations.retireExperience, ["a", "e", { signal }]);
    assert.deepEqual([retire.body, retire.query, retire.signal], [undefined, undefined, signal]);
    const listed = callOf(operations.listAgents, [{ limit: 3 }, { signal }]);
    assert.deepEqual([listed.query, listed.signal], [{ limit: 3 }, signal]);
    const health = callOf(operations.health, [{ signal }]);
    assert.deepEqual([health.query, health.signal], [undefined, signal]);
    await assert.rejects(client().health({ signal: "stop" }), { name: "TypeError", message: 'signal must be an AbortSignal, got "stop"' });
  });
});
