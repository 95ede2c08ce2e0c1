// Regenerate src/schema.d.ts from the service's OpenAPI document, or (--check) fail when it is stale.
//
//   npm run generate       # after any change to the REST API: rewrite src/schema.d.ts
//   npm run check-types    # exit 1, with the diff, when src/schema.d.ts differs from what the API generates
//
// The document comes from scripts/dump_openapi.py (the app's own `app.openapi()`), run with the Python
// named by MEMTRIAL_PYTHON, else the checkout's .venv, else `python3`; the repository root is put on
// PYTHONPATH so the checkout's service is the one described.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..", "..");
const target = resolve(here, "..", "src", "schema.d.ts");
const HEADER = [
  "// Generated from the memtrial service's OpenAPI document by `npm run generate` (scripts/generate.mjs).",
  "// Do not edit by hand: change the service, then regenerate; `npm run check-types` fails when this is stale.",
  "",
].join("\n");

function python() {
  if (process.env.MEMTRIAL_PYTHON) return process.env.MEMTRIAL_PYTHON;
  const venv = join(root, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

function openapiDocument() {
  const env = { ...process.env, PYTHONPATH: [root, process.env.PYTHONPATH].filter(Boolean).join(":") };
  const out = execFileSync(python(), [join(here, "dump_openapi.py")], {
    cwd: root,
    env,
    maxBuffer: 64 * 1024 * 1024,
    stdio: ["ignore", "pipe", "inherit"],
  });
  return JSON.parse(out.toString("utf8"));
}

async function generate() {
  const ast = await openapiTS(openapiDocument(), { alphabetize: true, defaultNonNullable: false });
  return HEADER + astToString(ast);
}

const text = await generate();
if (process.argv.includes("--check")) {
  const current = existsSync(target) ? readFileSync(target, "utf8") : "";
  if (current !== text) {
    const fresh = join(mkdtempSync(join(tmpdir(), "memtrial-schema-")), "schema.d.ts");
    writeFileSync(fresh, text);
    const diff = spawnSync("diff", ["-u", target, fresh], { encoding: "utf8" });
    process.stderr.write(diff.stdout || "");
    process.stderr.write(
      "src/schema.d.ts is stale: the service's OpenAPI document generates different types; run `npm run generate`\n",
    );
    process.exit(1);
  }
  console.log("src/schema.d.ts is up to date with the service's OpenAPI document");
} else {
  writeFileSync(target, text);
  console.log(`wrote ${target}`);
}
