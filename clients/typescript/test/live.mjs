// A real `memtrial serve` on SQLite in a temporary folder, for the tests: started, given a tenant, stopped.
//
// The Python is MEMTRIAL_PYTHON, else the checkout's .venv, else `python3`; the checkout's root is put on
// PYTHONPATH so the service under test is the checkout's.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export function python() {
  if (process.env.MEMTRIAL_PYTHON) return process.env.MEMTRIAL_PYTHON;
  const venv = join(ROOT, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

export function pythonEnv(extra = {}) {
  const path = [ROOT, process.env.PYTHONPATH].filter(Boolean).join(":");
  return { ...process.env, PYTHONPATH: path, OMP_NUM_THREADS: "1", MEMTRIAL_TORCH_THREADS: "1", ...extra };
}

export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `memtrial serve` on a fresh SQLite database; resolves once /readyz answers 200. */
export async function startServer({ timeoutMs = 180_000, env = {} } = {}) {
  const folder = mkdtempSync(join(tmpdir(), "memtrial-ts-"));
  const databaseUrl = `sqlite:///${join(folder, "memtrial.db")}`;
  const created = execFileSync(python(), ["-m", "memtrial.cli", "tenants", "create", "typescript", "--database-url", databaseUrl], {
    cwd: folder,
    env: pythonEnv(),
    encoding: "utf8",
  });
  const apiKey = /api key: (\S+)/.exec(created)?.[1];
  if (!apiKey) throw new Error(`memtrial tenants create printed no key: ${created}`);
  const port = await freePort();
  const logPath = join(folder, "server.log");
  const log = openSync(logPath, "w");
  const child = spawn(python(), ["-m", "memtrial.cli", "serve", "--database-url", databaseUrl, "--port", String(port)], {
    cwd: folder,
    env: pythonEnv(env),
    stdio: ["ignore", log, log],
  });
  const url = `http://127.0.0.1:${port}`;
  const output = () => readFileSync(logPath, "utf8");
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(folder, { recursive: true, force: true });
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      const text = output();
      await stop();
      throw new Error(`memtrial serve exited (${child.exitCode}): ${text.slice(-2000)}`);
    }
    try {
      const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) });
      if (response.status === 200) return { url, apiKey, databaseUrl, folder, output, stop };
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  const text = output();
  await stop();
  throw new Error(`memtrial serve did not answer /readyz within ${timeoutMs} ms: ${text.slice(-2000)}`);
}
