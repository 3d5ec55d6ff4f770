// Type-checks typecheck.ts against the generated declarations with the pinned
// TypeScript (tsc --noEmit, settings in tsconfig.json).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

test("tsc --noEmit accepts typecheck.ts", async () => {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const cwd = dirname(fileURLToPath(import.meta.url));
  const run = promisify(execFile)(process.execPath, [tsc, "--noEmit", "-p", "."], { cwd });
  const out = await run.catch((err) => err);
  assert.equal(out.code ?? 0, 0, `tsc failed:\n${out.stdout}${out.stderr}`);
});
