// Installs gen/ts (@cup-dev/api) into a new project the two ways another
// project would: by path (`npm install ../cup/gen/ts`, which npm links) and
// from the tarball `npm pack` makes. In each, it compiles README's examples
// (examples/node.ts and examples/browser.ts) with the pinned TypeScript and
// runs the Node one with plain node (no --preserve-symlinks) against a real
// cupd.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { repoRoot, startCupd } from "./cupd.js";

const run = promisify(execFile);
const here = fileURLToPath(new URL(".", import.meta.url));
const genTs = join(repoRoot, "gen", "ts");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
// What a project adds beside @cup-dev/api, pinned as test/ts pins them; the
// peer dependency @bufbuild/protobuf is left for npm to install.
const pinned = JSON.parse(readFileSync(join(here, "package.json"), "utf8")).dependencies;
const clients = ["@connectrpc/connect", "@connectrpc/connect-node", "@connectrpc/connect-web"].map((p) => `${p}@${pinned[p]}`);
const npmFlags = ["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];

/** A new project in a temporary directory, with README's examples in it. */
function project(t) {
  const dir = mkdtempSync(join(tmpdir(), "cup-ts-consumer-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { target: "ES2022", module: "nodenext", lib: ["ES2022", "DOM"], types: [], strict: true, skipLibCheck: true, outDir: "out" },
      files: ["node.ts", "browser.ts"],
    }),
  );
  cpSync(join(here, "examples"), dir, { recursive: true });
  return dir;
}

async function npm(dir, ...args) {
  return run("npm", [...args, ...npmFlags], { cwd: dir, maxBuffer: 16 << 20 });
}

/** Compiles the examples, then runs the Node one against baseUrl. */
async function compileAndRun(dir, baseUrl) {
  const src = join(dir, "node.ts");
  writeFileSync(src, readFileSync(src, "utf8").replace("http://127.0.0.1:8181", baseUrl));
  const out = await run(process.execPath, [tsc, "-p", "."], { cwd: dir }).catch((err) => err);
  assert.equal(out.code ?? 0, 0, `tsc failed:\n${out.stdout}${out.stderr}`);
  const { stdout } = await run(process.execPath, [join(dir, "out", "node.js")], { cwd: dir });
  return stdout;
}

test("README shows the examples as they are tested", () => {
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  for (const f of ["node.ts", "browser.ts"]) {
    assert.ok(readme.includes("```ts\n" + readFileSync(join(here, "examples", f), "utf8") + "```"), `README.md shows examples/${f}`);
  }
});

describe("gen/ts installed in another project", () => {
  let cupd;
  before(async () => {
    cupd = await startCupd();
  });
  after(async () => {
    await cupd?.stop();
  });

  const check = (stdout) => {
    assert.match(stdout, /^search-v2 \{.*"enabled":/m, "the demo's flags, with their specs");
    assert.match(stdout, /^read at [0-9a-f]{40}$/m);
  };

  test("by path: npm install ../cup/gen/ts links it, and plain node runs the example", { timeout: 180_000 }, async (t) => {
    assert.ok(existsSync(join(genTs, "node_modules", "@bufbuild", "protobuf")), "run make ts-package first");
    const dir = project(t);
    await npm(dir, "install", genTs, ...clients);
    assert.ok(lstatSync(join(dir, "node_modules", "@cup-dev", "api")).isSymbolicLink(), "npm linked the folder");
    assert.ok(existsSync(join(dir, "node_modules", "@bufbuild", "protobuf")), "npm installed the peer dependency");
    check(await compileAndRun(dir, cupd.baseUrl));
  });

  test("from npm pack's tarball: only src and package.json, and the example runs", { timeout: 180_000 }, async (t) => {
    const dir = project(t);
    await npm(dir, "pack", genTs, "--pack-destination", dir);
    const [tgz] = readdirSync(dir).filter((f) => f.endsWith(".tgz"));
    assert.equal(tgz, "cup-dev-api-0.0.0.tgz");
    await npm(dir, "install", `./${tgz}`, ...clients);
    const api = join(dir, "node_modules", "@cup-dev", "api");
    assert.ok(!lstatSync(api).isSymbolicLink());
    assert.deepEqual(readdirSync(api).sort(), ["package.json", "src"], "no node_modules, nothing else");
    const manifest = JSON.parse(readFileSync(join(api, "package.json"), "utf8"));
    assert.deepEqual(manifest.peerDependencies, { "@bufbuild/protobuf": pinned["@bufbuild/protobuf"] });
    assert.ok(existsSync(join(dir, "node_modules", "@bufbuild", "protobuf")), "npm installed the peer dependency");
    check(await compileAndRun(dir, cupd.baseUrl));
  });
});
