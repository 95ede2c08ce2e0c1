// The example runs end to end, offline: a live `memtrial serve` (SQLite, temporary) and the project's fake
// OpenAI-compatible server (tests/fake_llm.py) as the stand-in model, then `node dist/agent.js` against both.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { ROOT, python, pythonEnv, startServer } from "../../../clients/typescript/test/live.mjs";

let live;
let fake;
let modelBaseUrl;

/** `python tests/fake_llm.py` on a free port; its first line is its base URL. */
async function startFakeModel() {
  const child = spawn(python(), [join(ROOT, "tests", "fake_llm.py"), "--follow"], { env: pythonEnv(), stdio: ["ignore", "pipe", "inherit"] });
  const first = await new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`tests/fake_llm.py exited (${code}) before it served`)));
    createInterface({ input: child.stdout }).once("line", resolve);
  });
  return { child, url: first.trim() };
}

before(async () => {
  live = await startServer();
  fake = await startFakeModel();
  modelBaseUrl = fake.url;
});
after(async () => {
  fake?.child.kill("SIGTERM");
  await live?.stop();
});

test("the AI SDK agent drafts each designed subset as its own model call, settles, and prints the values", async () => {
  const months = 12;
  const { stdout } = await promisify(execFile)(process.execPath, ["dist/agent.js"], {
    env: { ...process.env, MEMTRIAL_URL: live.url, MEMTRIAL_API_KEY: live.apiKey, MODEL_BASE_URL: modelBaseUrl, MONTHS: String(months) },
    timeout: 300_000,
  });
  const lines = stdout.trim().split("\n");
  const monthly = lines.filter((line) => line.startsWith("month "));
  assert.equal(monthly.length, months, stdout);
  for (const line of monthly) {
    const [, subsets, calls] = /: (\d+) subsets, (\d+) model calls, action \w+$/.exec(line) ?? [];
    assert.ok(Number(subsets) >= 2 && subsets === calls, `one model call per designed subset: ${line}`);
  }
  const at = lines.indexOf("values (utility per decision), best first:");
  assert.ok(at > 0, stdout);
  const values = lines.slice(at + 1, at + 5).map((line) => /^ {2}(-?\d+\.\d{5})(?: {2}\[[^\]]+\])? {2}(Overweight \w+: .+)$/.exec(line));
  assert.ok(values.every(Boolean), `a value for each of the four lessons: ${stdout}`);
  const means = values.map((match) => Number(match[1]));
  assert.deepEqual([...means].sort((a, b) => b - a), means, "best first");
  assert.equal(new Set(values.map((match) => match[2])).size, 4);
  // the planted market: bonds and gold beat equities; the stand-in model follows the lessons it is given
  const order = values.map((match) => /^Overweight (\w+)/.exec(match[2])[1]);
  assert.deepEqual(new Set(order.slice(0, 2)), new Set(["TLT", "GLD"]), stdout);
  assert.equal(order[3], "SPY", stdout);
  assert.ok(means[1] > 0 && means[3] < 0, stdout);
  assert.match(lines.at(-1), /^trust log: \d+ entries, chain intact$/);
});
