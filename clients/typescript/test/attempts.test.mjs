// The retry policy on its own (no I/O): which outcomes are retried, after what pause, with which key.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Attempts, callOf, operations } from "../dist/index.js";

const answer = (status, headers = {}, body = "") => ({ response: new Response(body || null, { status, headers }), text: body });
const lost = { lost: new TypeError("fetch failed") };
const create = { method: "POST", path: "/v1/agents", creates: true };

test("a creating call carries one key for all its attempts; a read carries none", () => {
  let made = 0;
  const attempts = new Attempts(create, 2, 2000, 0, () => `key-${++made}`);
  assert.deepEqual(attempts.headers, { "Idempotency-Key": "key-1" });
  assert.equal(attempts.waitAfter(lost), 250);
  assert.deepEqual(attempts.headers, { "Idempotency-Key": "key-1" });
  assert.deepEqual(new Attempts({ method: "GET", path: "/v1/agents", creates: false }, 2, 2000, 0).headers, {});
});

test("lost answers and 429/502/503/504 are retried with a doubling pause, up to `retries` times", () => {
  const attempts = new Attempts(create, 3, 2000, 0);
  assert.deepEqual([lost, answer(502), answer(504)].map((o) => attempts.waitAfter(o)), [250, 500, 1000]);
  assert.equal(attempts.waitAfter(answer(503)), null, "the retries are spent");
  const capped = new Attempts(create, 5, 300, 0);
  assert.deepEqual([lost, lost, lost].map((o) => capped.waitAfter(o)), [250, 300, 300]);
});

test("Retry-After is honoured up to maxWaitMs; a longer or unreadable one ends the call", () => {
  assert.equal(new Attempts(create, 2, 2000, 0).waitAfter(answer(429, { "retry-after": "1.5" })), 1500);
  assert.equal(new Attempts(create, 2, 2000, 0).waitAfter(answer(503, { "retry-after": "3" })), null);
  assert.equal(new Attempts(create, 2, 2000, 0).waitAfter(answer(503, { "retry-after": "Wed, 21 Oct 2015" })), null);
  // an HTTP date: waited for until then (at once once past; not at all beyond maxWaitMs)
  assert.equal(new Attempts(create, 2, 2000, 0).waitAfter(answer(503, { "retry-after": "Wed, 21 Oct 2015 07:28:00 GMT" })), 0);
  const soon = new Date(Date.now() + 1500).toUTCString();
  const waited = new Attempts(create, 2, 2000, 0).waitAfter(answer(503, { "retry-after": soon }));
  assert.ok(waited !== null && waited > 0 && waited <= 1500, String(waited));
  const later = new Date(Date.now() + 3_600_000).toUTCString();
  assert.equal(new Attempts(create, 2, 2000, 0).waitAfter(answer(503, { "retry-after": later })), null);
});

test("a refusal is final, and so is a lost PATCH or DELETE (no key: the change may be done)", () => {
  for (const status of [400, 401, 404, 409, 422, 500]) assert.equal(new Attempts(create, 2, 2000, 0).waitAfter(answer(status)), null);
  for (const method of ["PATCH", "DELETE"]) {
    assert.equal(new Attempts({ method, path: "/v1/agents/a", creates: false }, 2, 2000, 0).waitAfter(lost), null);
  }
  assert.equal(new Attempts({ method: "GET", path: "/healthz", creates: false }, 2, 2000, 0).waitAfter(lost), 250);
});

test("a retry is sent only where it cannot do twice what the first attempt may have done", () => {
  const own = (status, code) => answer(status, {}, JSON.stringify({ error: { code, message: "m", field: null } }));
  const release = { method: "POST", path: "/v1/agents/a/experiences/e/release", creates: false };
  const read = { method: "GET", path: "/v1/agents/a/values", creates: false };
  const rank = { method: "POST", path: "/v1/agents/a/experiences/rank", creates: false, reads: true }; // writes nothing
  const wait = (call, outcome) => new Attempts(call, 2, 2000, 0).waitAfter(outcome);
  // the service's own 502: server drafting failed and failed the decision, its model calls spent: final
  assert.equal(wait(create, own(502, "malformed_draft")), null);
  assert.equal(wait(create, own(502, "drafter_unavailable")), null);
  // a proxy's 502/503/504, or a lost answer: resent for a keyed call or a read, not for an unkeyed change
  // and the service's 503 server_stopping: a server that stopped mid-request may have done it
  const stopped = own(503, "server_stopping");
  for (const outcome of [lost, answer(502, {}, "<html>Bad Gateway</html>"), answer(503), answer(504), stopped]) {
    assert.equal(wait(create, outcome), 250);
    assert.equal(wait(read, outcome), 250);
    assert.equal(wait(rank, outcome), 250);
    assert.equal(wait(release, outcome), null);
  }
  // the service's own 503 (nothing written) and any 429: resent for every call
  for (const call of [release, create, read]) {
    assert.equal(wait(call, own(503, "unavailable")), 250);
    assert.equal(wait(call, own(429, "rate_limited")), 250);
  }
});

test("a retry that finds its own first attempt in progress waits for it, up to inProgressWaitMs in all", () => {
  const busy = answer(409, { "retry-after": "1" }, JSON.stringify({ error: { code: "idempotency_in_progress", message: "m" } }));
  const attempts = new Attempts(create, 1, 2000, 2500);
  assert.equal(attempts.waitAfter(busy), null, "the first attempt's 409 is someone else's key: final");
  const retried = new Attempts(create, 1, 2000, 2500);
  assert.equal(retried.waitAfter(lost), 250);
  assert.deepEqual([busy, busy, busy].map((o) => retried.waitAfter(o)), [1000, 1000, 500]);
  assert.equal(retried.waitAfter(busy), null, "waited inProgressWaitMs in all");
  // a call sent again with the caller's own key may find its first sending still running: it waits from the start
  const resent = new Attempts({ ...create, idempotencyKey: "agent-fund-1" }, 1, 2000, 2500);
  assert.deepEqual(resent.headers, { "Idempotency-Key": "agent-fund-1" });
  assert.deepEqual([busy, busy, busy, busy].map((o) => resent.waitAfter(o)), [1000, 1000, 500, null]);
});

test("a row fills its path with encoded ids, then takes the body, then the query", () => {
  assert.deepEqual(callOf(operations.getExperience, ["a b", "é"]), {
    method: "GET", path: "/v1/agents/a%20b/experiences/%C3%A9", body: undefined, query: undefined, creates: false, reads: false, text: false,
    signal: undefined,
  });
  assert.equal(callOf(operations.metrics, []).text, true); // its answer is text, not JSON
  assert.equal(callOf(operations.rankExperiences, ["a", { k: 1 }]).reads, true); // resent after a lost answer
  assert.deepEqual(callOf(operations.listDecisions, ["a", { limit: 3 }]).query, { limit: 3 });
  const settle = callOf(operations.settle, ["a", "d", { utilities: [1] }]);
  assert.deepEqual([settle.method, settle.path, settle.body, settle.creates], ["POST", "/v1/agents/a/decisions/d/settle", { utilities: [1] }, true]);
  assert.throws(() => callOf(operations.getAgent, ["a/b"]), /agent_id must be a single id, not a path/);
});
