// What the types, list, proposals and sign-in tests share: bounded polling,
// waits on the list's rows, a policy with tokens, and the fake GitHub
// (internal/cmd/fakegithub). The Connect client is in apiclient.js.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** The repository root: this file is test/ui/uiutil.js. */
export const repoRoot = process.env.CUP_REPO_ROOT ?? fileURLToPath(new URL("../../", import.meta.url));

/**
 * Calls fn until it returns without throwing (its value is returned), for
 * at most timeoutMs; then throws fn's last error. For the effects of writes
 * made outside the page.
 */
export async function eventually(fn, { timeoutMs = 15_000, intervalMs = 100, what = "a condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const e = new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${last?.message ?? last}`);
      e.cause = last;
      throw e;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** The texts of the cells of the first column (names) of the list's rows. */
export async function rowNames(page) {
  return page.locator('[data-testid="rows"] tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.name));
}

/** Waits until the list's rows are exactly names, in order. */
export async function waitForRows(page, names, timeoutMs = 15_000) {
  await page.waitForFunction(
    (want) => {
      const got = [...document.querySelectorAll('[data-testid="rows"] tbody tr')].map((tr) => tr.dataset.name);
      return JSON.stringify(got) === JSON.stringify(want);
    },
    names,
    { timeout: timeoutMs },
  ).catch(async (err) => {
    throw new Error(`rows are ${JSON.stringify(await rowNames(page).catch(() => "?"))}, want ${JSON.stringify(names)}: ${err.message}`);
  });
}

/** Waits until the list says it is live (listed and watching). */
export async function waitForLive(page, timeoutMs = 15_000) {
  await page.locator('[data-testid="live"][data-state="live"]').waitFor({ timeout: timeoutMs });
}

/**
 * Starts the fake GitHub (internal/cmd/fakegithub, built with go build into
 * a temporary folder): the demo repository over smart HTTP and GitHub's
 * pull-request API. Resolves with its addresses, the cupd arguments that
 * use them, and stop().
 */
export async function startFakeGitHub() {
  const tmp = mkdtempSync(join(tmpdir(), "cup-ui-fakegithub-"));
  const bin = join(tmp, "fakegithub");
  try {
    await run("go", ["build", "-o", bin, "./internal/cmd/fakegithub"], repoRoot);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  const child = spawn(bin, [], { cwd: tmp, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, TMPDIR: tmp } });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (s) => (stderr = (stderr + s).slice(-8192)));
  const lines = createInterface({ input: child.stdout });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const stop = async () => {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {}
    const t = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    }, 5000);
    await exited;
    clearTimeout(t);
    rmSync(tmp, { recursive: true, force: true });
  };
  const onExit = () => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {}
  };
  process.once("exit", onExit);
  let timer;
  try {
    const info = await Promise.race([
      new Promise((resolve) => lines.once("line", (l) => resolve(JSON.parse(l)))),
      exited.then((code) => {
        throw new Error(`fakegithub exited (${code}) before printing its addresses: ${stderr}`);
      }),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`fakegithub printed nothing in 120 s: ${stderr}`)), 120_000);
      }),
    ]);
    const tokenFile = join(tmp, "scm-token");
    writeFileSync(tokenFile, "scm-token\n");
    // cupd prints "cupd is serving <repository> at <its URL>", and the
    // harness takes the first http://127.0.0.1:PORT it prints for cupd's:
    // name the repository by localhost so that it cannot be mistaken.
    const repository = info.repository.replace("//127.0.0.1:", "//localhost:");
    return {
      ...info,
      repository,
      /** cupd's arguments for proposals on this fake. */
      cupdArgs: [
        "--repository", repository,
        "--fetch-interval", "0",
        "--scm", "github",
        "--scm-url", info.api,
        "--scm-repository", "acme/config",
        "--scm-token-file", tokenFile,
        "--proposals-refresh", "1s",
      ],
      /** Merges (or with close, closes) pull request id, as a reviewer would. */
      review: async (id, how = "merge") => {
        const res = await fetch(`${info.control}/${how}?id=${id}`, { method: "POST" });
        if (res.status !== 204) throw new Error(`${how} ${id}: ${res.status} ${await res.text()}`);
      },
      stop: async () => {
        process.removeListener("exit", onExit);
        await stop();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

function run(cmd, args, cwd) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    p.stderr.on("data", (s) => (err += s));
    p.once("error", reject);
    p.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(" ")}: exit ${code}\n${err}`))));
  });
}

/**
 * Writes a policy and a tokens file into a new temporary folder: everyone
 * signed in may read (get, list, watch) everything; the user "editor" may
 * also put and delete flags everywhere. Tokens: "token-reader" (user
 * reader) and "token-editor" (user editor). Returns the cupd arguments and
 * a cleanup.
 */
export function writePolicy() {
  const dir = mkdtempSync(join(tmpdir(), "cup-ui-policy-"));
  const policy = `apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata:
  name: viewer
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["get", "list", "watch"]
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata:
  name: viewers
subjects:
- kind: Group
  name: system:authenticated
roleRef:
  kind: ClusterRole
  name: viewer
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata:
  name: flag-editor
rules:
- apiGroups: ["flags.cup.dev"]
  resources: ["flags"]
  verbs: ["put", "delete"]
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata:
  name: flag-editors
subjects:
- kind: User
  name: editor
roleRef:
  kind: ClusterRole
  name: flag-editor
`;
  const sha = (s) => createHash("sha256").update(s).digest("hex");
  const tokens = `tokens:
- sha256: ${sha("token-reader")}
  user: reader
- sha256: ${sha("token-editor")}
  user: editor
`;
  writeFileSync(join(dir, "policy.yaml"), policy);
  writeFileSync(join(dir, "tokens.yaml"), tokens);
  return {
    args: ["--policy", join(dir, "policy.yaml"), "--tokens-file", join(dir, "tokens.yaml")],
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
