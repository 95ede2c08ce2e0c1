// The client against a live `memtrial serve` (SQLite in a temporary folder) that this file starts: the whole
// loop, a correction, errors, paging, and retries that reuse one Idempotency-Key.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { MemtrialClient, MemtrialConnectionError, MemtrialError, isPlan, operations } from "../dist/index.js";
import { startProxy } from "./proxy.mjs";
import { ROOT, startServer } from "./live.mjs";

const CLIENT = join(ROOT, "clients", "typescript");
const run = promisify(execFile);

const UNIVERSE = [
  { asset: "SPY", asset_class: "equities" },
  { asset: "TLT", asset_class: "bonds" },
  { asset: "GLD", asset_class: "commodities" },
  { asset: "BIL", asset_class: "cash" },
];
const ASSETS = UNIVERSE.map((a) => a.asset);
const LESSONS = [
  "Overweight TLT: long bonds rallied on a rate cut.",
  "Overweight GLD: gold held in a banking scare.",
  "Overweight SPY: equities always recover within the month.",
  "Overweight BIL: cash protected the book.",
];
const DRIFT = { SPY: -0.004, TLT: 0.004, GLD: 0.003, BIL: 0.0001 }; // the planted market, per session
const MONTH_ZERO = Date.UTC(2021, 2, 1, 21);
const DAY = 86_400_000;

/** A draft conditioned on its subset: an even book tilted toward each asset a given lesson recommends. */
function draftFor(texts) {
  const weights = Object.fromEntries(ASSETS.map((a) => [a, 1]));
  for (const text of texts) for (const [, asset] of text.matchAll(/Overweight (\w+)/g)) weights[asset] += 1.5;
  const total = Object.values(weights).reduce((s, w) => s + w, 0);
  return Object.fromEntries(ASSETS.map((a) => [a, weights[a] / total]));
}

/** Two sessions of returns with the planted drift and a small deterministic wiggle (`sign` flips the market). */
function returnsFor(month, sign = 1) {
  return Object.fromEntries(ASSETS.map((a, i) => [a, [0, 1].map((s) => sign * DRIFT[a] + 0.001 * Math.sin(month * 7 + i * 3 + s))]));
}

function month(t) {
  const when = new Date(MONTH_ZERO + 30 * DAY * t);
  return { decision_time: when.toISOString(), maturity: new Date(when.getTime() + 28 * DAY).toISOString() };
}

/** Plan month `t`, draft each designed subset, settle it; the settlement. */
async function runMonth(client, agentId, t) {
  const plan = await client.createDecision(agentId, { ...month(t), context_text: `month ${t}: rates and equities`, horizon: 2 });
  assert.ok(isPlan(plan), "client drafting answers a plan");
  const drafts = plan.subsets.map((subset) => draftFor(subset.texts));
  const decision = await client.submitDrafts(agentId, plan.decision_id, { drafts });
  assert.equal(decision.status, "decided");
  return client.settle(agentId, plan.decision_id, { returns: returnsFor(t), settled_at: month(t).maturity });
}

let live;
before(async () => {
  live = await startServer();
});
after(async () => {
  await live?.stop();
});

const connect = (options = {}) => new MemtrialClient({ baseUrl: live.url, apiKey: live.apiKey, ...options });

describe("the whole loop", () => {
  test("agent, experiences, plan, drafts, settle, values, trust and verify, then a correction", async () => {
    const client = connect();
    const agent = await client.createAgent({ name: "ts-fund", investor: "balanced", universe: UNIVERSE });
    assert.equal((await client.getAgent(agent.id)).name, "ts-fund");
    const added = await client.addExperiences(agent.id, { experiences: LESSONS.map((text) => ({ text })) });
    const ids = added.items.map((e) => e.id);
    assert.equal(ids.length, 4);
    let last;
    for (let t = 0; t < 4; t++) last = await runMonth(client, agent.id, t);
    assert.equal(last.status, "settled");

    const values = await client.values(agent.id);
    assert.deepEqual(Object.keys(values.values).sort(), [...ids].sort());
    const means = Object.values(values.values).map((v) => v.mean);
    assert.ok(means.every((m) => Number.isFinite(m) && m !== 0), `every lesson gets a contrast: ${means}`);
    const byText = Object.fromEntries(Object.values(values.values).map((v) => [v.text, v.mean]));
    assert.ok(byText[LESSONS[0]] > byText[LESSONS[2]], "the bonds lesson beats the equities one in a bond market");

    const trust = await client.trust(agent.id, { limit: 10 });
    assert.ok(trust.n_scores >= 1 && trust.scores.length === trust.n_scores, JSON.stringify(trust));
    const verified = await client.verify(agent.id);
    assert.equal(verified.ok, true);
    const log = await client.iterLog(agent.id, { limit: 2 }).toArray(); // walked two entries a page
    assert.deepEqual(log.map((entry) => entry.index), [...Array(verified.n_entries).keys()]);
    assert.ok(log.every((entry, i) => i === 0 || entry.prev_hash === log[i - 1].hash), "one hash chain");

    const decisions = await client.iterDecisions(agent.id, { status: "settled", limit: 3 }).toArray();
    assert.equal(decisions.length, 4);
    const first = decisions[0].decision_id;
    const wrong = await client.getDecision(agent.id, first);
    const corrected = await client.correct(agent.id, first, {
      reason: "the price feed had the wrong sign",
      returns: returnsFor(0, -1),
      settled_at: month(0).maturity,
    });
    assert.equal(corrected.corrections.length, 1);
    assert.equal(corrected.corrections[0].reason, "the price feed had the wrong sign");
    assert.notDeepEqual(corrected.draft_utilities, wrong.settlement.draft_utilities);
    const relearned = await client.values(agent.id);
    assert.notDeepEqual(Object.values(relearned.values).map((v) => v.mean), means);
    const again = await client.verify(agent.id);
    assert.ok(again.ok && again.n_entries > verified.n_entries, "the correction is logged on the chain");
    const kinds = (await client.iterLog(agent.id).toArray()).slice(verified.n_entries).map((entry) => entry.kind);
    assert.ok(kinds.includes("correction"), `the log records the correction: ${kinds}`);
  });
});

describe("errors", () => {
  test("a refusal is one MemtrialError naming the field", async () => {
    const client = connect();
    await assert.rejects(
      client.createAgent({ name: "bad", investor: "balanced", universe: UNIVERSE, k: 0 }),
      (error) => {
        assert.ok(error instanceof MemtrialError);
        assert.deepEqual([error.status, error.code, error.field], [422, "invalid", "k"]);
        assert.match(error.message, /^k: /);
        assert.deepEqual(error.errors[0].field, "k");
        return true;
      },
    );
    assert.equal((await client.listAgents({ name: "bad" })).items.length, 0, "nothing written on a refusal");
  });

  test("a forged cursor is refused, naming the cursor", async () => {
    const client = connect();
    const agent = await client.createAgent({ name: "cursor", investor: "balanced", universe: UNIVERSE });
    for (const listing of [() => client.listAgents({ cursor: "not-a-cursor" }), () => client.listDecisions(agent.id, { cursor: "forged" })]) {
      await assert.rejects(listing(), (error) => error instanceof MemtrialError && error.status === 422 && error.field === "cursor");
    }
  });

  test("an unknown agent is 404 and a wrong key 401", async () => {
    await assert.rejects(connect().getAgent("no-such-agent"), (e) => e instanceof MemtrialError && e.status === 404 && e.code === "not_found");
    await assert.rejects(connect({ apiKey: "mt_wrong" }).listAgents(), (e) => e instanceof MemtrialError && e.status === 401);
  });

  test("an id that is a path is refused before anything is sent", async () => {
    let sent = 0;
    const client = connect({ fetch: (...args) => (sent++, fetch(...args)) });
    await assert.rejects(client.getExperience("agent", "../other"), { name: "TypeError", message: /experience_id must be a single id/ });
    await assert.rejects(client.getAgent(""), { name: "TypeError", message: /agent_id must be a non-empty string/ });
    assert.equal(sent, 0);
  });

  test("no server: a MemtrialConnectionError after the retries", async () => {
    const client = new MemtrialClient({ baseUrl: "http://127.0.0.1:9", apiKey: "x", retries: 1, maxWaitMs: 10 });
    await assert.rejects(client.health(), (e) => e instanceof MemtrialConnectionError && /no answer from/.test(e.message));
  });
});

describe("paging", () => {
  test("listings walk every page, in order, once", async () => {
    const client = connect();
    const agent = await client.createAgent({ name: "pages", investor: "balanced", universe: UNIVERSE });
    const added = await client.addExperiences(agent.id, { experiences: Array.from({ length: 7 }, (_, i) => ({ text: `lesson ${i}` })) });
    const pages = [];
    for await (const page of client.iterExperiences(agent.id, { limit: 3 }).pages()) pages.push(page.items.length);
    assert.deepEqual(pages, [3, 3, 1]);
    const walked = [];
    for await (const experience of client.iterExperiences(agent.id, { limit: 3 })) walked.push(experience.id);
    assert.deepEqual(walked, added.items.map((e) => e.id));
  });
});

describe("retries", () => {
  test("a create whose answer was lost is retried with the same key and creates once", async () => {
    const proxy = await startProxy(live.url, [{ match: (m, p) => m === "POST" && p.endsWith("/experiences"), action: "lose" }]);
    try {
      const direct = connect();
      const agent = await direct.createAgent({ name: "retry", investor: "balanced", universe: UNIVERSE });
      const client = connect({ baseUrl: proxy.url, maxWaitMs: 50 });
      const experience = await client.addExperience(agent.id, { text: "Overweight TLT: bonds." });
      const posts = proxy.seen.filter((r) => r.method === "POST");
      assert.equal(posts.length, 2, "the lost answer was retried once");
      assert.ok(posts[0].key && posts[0].key === posts[1].key, `one key, reused: ${posts.map((p) => p.key)}`);
      const listed = await direct.iterExperiences(agent.id).toArray();
      assert.deepEqual(listed.map((e) => e.id), [experience.id], "created once; the retry got the first answer");
    } finally {
      await proxy.close();
    }
  });

  test("503 with Retry-After is waited for and retried with the same key; 422 is not retried", async () => {
    const proxy = await startProxy(live.url, [{ match: (m, p) => m === "POST" && p === "/v1/agents", action: "busy", retryAfter: 0.3 }]);
    try {
      const client = connect({ baseUrl: proxy.url });
      const agent = await client.createAgent({ name: "busy", investor: "balanced", universe: UNIVERSE });
      const posts = proxy.seen.filter((r) => r.method === "POST");
      assert.equal(posts.length, 2);
      assert.equal(posts[0].key, posts[1].key);
      assert.ok(posts[1].at - posts[0].at >= 290, `waited the Retry-After: ${posts[1].at - posts[0].at} ms`);
      assert.equal((await client.getAgent(agent.id)).name, "busy");
      await assert.rejects(client.createAgent({ name: "bad", k: 0 }), MemtrialError);
      assert.equal(proxy.seen.filter((r) => r.method === "POST").length, 3, "a refusal is final");
    } finally {
      await proxy.close();
    }
  });

  test("a Retry-After longer than maxWaitMs is not waited for: the 503 is raised", async () => {
    const proxy = await startProxy(live.url, [{ match: (m) => m === "GET", action: "busy", retryAfter: 30 }]);
    try {
      const client = connect({ baseUrl: proxy.url, maxWaitMs: 1000 });
      await assert.rejects(client.listAgents(), (e) => e instanceof MemtrialError && e.status === 503 && e.code === "database_unavailable");
      assert.equal(proxy.seen.length, 1);
    } finally {
      await proxy.close();
    }
  });
});

describe("the table of operations", () => {
  test("covers every operation of the service's OpenAPI document, keying exactly those that take an Idempotency-Key", async () => {
    const document = await (await fetch(`${live.url}/openapi.json`)).json();
    const served = [];
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, spec] of Object.entries(methods)) {
        const keyed = (spec.parameters ?? []).some((p) => p.in === "header" && p.name === "Idempotency-Key");
        served.push(`${method.toUpperCase()} ${path}${keyed ? " (keyed)" : ""}`);
      }
    }
    const rows = new Set(Object.values(operations).map((row) => `${row.method} ${row.path}${row.creates ? " (keyed)" : ""}`));
    const missing = served.filter((s) => !rows.has(s));
    assert.deepEqual(missing, [], "add one row per operation to src/operations.ts (creates: true where it takes an Idempotency-Key)");
    assert.deepEqual([...rows].filter((r) => !served.includes(r)), [], "rows the service does not serve");
  });
});

describe("the guide", () => {
  test("the TypeScript blocks of docs/typescript.md compile and run in order, as one program", async () => {
    const guide = readFileSync(join(ROOT, "docs", "typescript.md"), "utf8");
    const blocks = [...guide.matchAll(/```ts\n(.*?)```/gs)].map((match) => match[1]);
    assert.ok(blocks.length >= 4, "the guide has its examples");
    const folder = join(CLIENT, ".docs-build"); // inside the package: `from "memtrial"` resolves to it
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(folder);
    writeFileSync(join(folder, "guide.ts"), blocks.join("\n"));
    const tsc = join(CLIENT, "node_modules", ".bin", "tsc");
    const flags = ["--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--strict", "--noUncheckedIndexedAccess", "--exactOptionalPropertyTypes", "--types", "node", "--rootDir", folder];
    await run(tsc, [...flags, "--outDir", join(folder, "out"), join(folder, "guide.ts")], { cwd: CLIENT });
    const { stdout } = await run(process.execPath, [join(folder, "out", "guide.js")], {
      env: { ...process.env, MEMTRIAL_URL: live.url, MEMTRIAL_API_KEY: live.apiKey },
    });
    assert.match(stdout, /^contributions in utility per decision, largest first: /m);
    assert.match(stdout, /ok: true,\s+n_entries: 2/);
    assert.match(stdout, /^422 invalid k$/m);
    assert.match(stdout, /^ok$/m);
    assert.match(stdout, /^cancelled: AbortError$/m);
    assert.match(stdout, /^listed$/m);
    assert.match(stdout, /^1 agents named fund$/m);
    rmSync(folder, { recursive: true, force: true });
  });
});
