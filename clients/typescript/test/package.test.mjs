// The package as another project loads it: ESM by `import`, and by `require` (Node >= 20.19 loads ES modules with
// require) from a CommonJS project compiled with TypeScript's old resolution (module commonjs, moduleResolution
// node10), which reads `types`/`main` to compile and then runs on the `exports` map.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const CLIENT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const run = promisify(execFile);

/** A project in a temporary folder with the package installed as node_modules/memtrial (a link to this folder). */
function project(files) {
  const folder = mkdtempSync(join(tmpdir(), "memtrial-package-"));
  mkdirSync(join(folder, "node_modules"));
  symlinkSync(CLIENT, join(folder, "node_modules", "memtrial"), "dir");
  for (const [name, text] of Object.entries(files)) writeFileSync(join(folder, name), text);
  return folder;
}

test("exports lists types first and a default condition beside import, both the ESM entry", () => {
  const manifest = JSON.parse(readFileSync(join(CLIENT, "package.json"), "utf8"));
  assert.deepEqual(Object.entries(manifest.exports["."]), [
    ["types", "./dist/index.d.ts"],
    ["import", "./dist/index.js"],
    ["default", "./dist/index.js"],
  ]);
});

test("a CommonJS project compiled with moduleResolution node10 imports the client and runs", async () => {
  const folder = project({
    "package.json": JSON.stringify({ name: "old-resolution", private: true, type: "commonjs" }),
    "tsconfig.json": JSON.stringify({
      compilerOptions: { module: "commonjs", moduleResolution: "node10", target: "es2022", lib: ["es2022", "dom"], types: [], strict: true, outDir: "out" },
      files: ["main.ts"],
    }),
    "main.ts": [
      'import { MemtrialClient, MemtrialError } from "memtrial";',
      'const client = new MemtrialClient({ baseUrl: "http://127.0.0.1:8000" });',
      'console.log(typeof client.createAgent, new MemtrialError(404, "not_found", "m", null).code);',
      "",
    ].join("\n"),
  });
  try {
    await run(join(CLIENT, "node_modules", ".bin", "tsc"), ["-p", folder], { cwd: folder });
    const { stdout } = await run(process.execPath, [join(folder, "out", "main.js")], { cwd: folder });
    assert.equal(stdout, "function not_found\n");
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});
