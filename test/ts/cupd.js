// Starts and stops a real cupd for the tests: `go run ./cmd/cupd serve` on a
// free port, serving the embedded demo repository.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** The repository root: this file is test/ts/cupd.js. */
export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

/** How long to wait for cupd's address; `go run` may compile first. */
export const startTimeoutMs = 120_000;

/** How long SIGTERM may take before the process group gets SIGKILL. */
const stopTimeoutMs = 15_000;

/**
 * Starts `go run ./cmd/cupd serve --address 127.0.0.1:0` (and args) in the
 * repository root, in its own process group, and resolves with its base URL once it
 * prints a line containing http://127.0.0.1:PORT. Rejects with cupd's stderr
 * when it exits first or prints nothing within startTimeoutMs.
 *
 * cupd gets a TMPDIR of its own, so the demo repository it creates there is
 * removed by stop() even when cupd is killed.
 */
export async function startCupd(args = []) {
  const tmp = mkdtempSync(join(tmpdir(), "cup-test-ts-"));
  const child = spawn("go", ["run", "./cmd/cupd", "serve", "--address", "127.0.0.1:0", ...args], {
    cwd: repoRoot,
    detached: true, // its own process group: stop() kills go run and cupd together
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, TMPDIR: tmp },
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (s) => {
    stderr = (stderr + s).slice(-8192); // keep draining; keep the tail for errors
  });
  let exited = child.exitCode !== null;
  const exit = new Promise((resolve) => {
    child.once("exit", (code, signal) => {
      exited = true;
      resolve(`exited (code ${code}, signal ${signal})`);
    });
    child.once("error", (err) => {
      exited = true; // spawn failed, e.g. no go on PATH
      resolve(`could not start: ${err.message}`);
    });
  });
  // A safety net for when the test process ends without running stop().
  const onExit = () => child.pid !== undefined && killGroup(child.pid, "SIGKILL");
  process.once("exit", onExit);

  const stop = async () => {
    process.removeListener("exit", onExit);
    if (child.pid !== undefined && (!exited || groupAlive(child.pid))) {
      killGroup(child.pid, "SIGTERM"); // cupd shuts down gracefully on SIGTERM
      const deadline = Date.now() + stopTimeoutMs;
      while (groupAlive(child.pid) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      killGroup(child.pid, "SIGKILL");
      await exit;
    }
    rmSync(tmp, { recursive: true, force: true });
  };

  const lines = createInterface({ input: child.stdout });
  const stdout = [];
  let timer;
  try {
    const baseUrl = await Promise.race([
      new Promise((resolve) => {
        lines.on("line", (line) => {
          stdout.push(line);
          // "cupd is serving REPOSITORY at URL": the repository may be a URL too.
          const m = /^cupd is serving .* at (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
          if (m) resolve(m[1]);
        });
      }),
      exit.then((how) => {
        throw new Error(
          `go run ./cmd/cupd ${how} before printing its address\n` +
            `stdout:\n${stdout.join("\n")}\nstderr:\n${stderr}`,
        );
      }),
      new Promise((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(
                `cupd did not print an http://127.0.0.1:PORT address within ${startTimeoutMs / 1000} s\n` +
                  `stdout:\n${stdout.join("\n")}\nstderr:\n${stderr}`,
              ),
            ),
          startTimeoutMs,
        );
      }),
    ]);
    return { baseUrl, stop, stderr: () => stderr };
  } catch (err) {
    await stop();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

function groupAlive(pid) {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

function killGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch (err) {
    if (err.code !== "ESRCH") throw err;
  }
}
