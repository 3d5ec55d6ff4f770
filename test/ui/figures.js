// The UI's figures, measured in Debian's chromium against a real cupd: what
// the first load costs (bytes over the wire, time until the types are shown)
// and how long a list takes to render, for 1,000 resources on one page and
// for 10,000 resources paged. A load driver, not a test: `make ui-figures`.
//
//   node figures.js [--sizes 1000,10000] [--runs 5]
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { launchBrowser, newPage, startCupd } from "./harness.js";
import { repoRoot } from "../ts/cupd.js";

const { values } = parseArgs({
  options: { sizes: { type: "string", default: "1000,10000" }, runs: { type: "string", default: "5" } },
});
const runs = Number(values.runs);
const sizes = values.sizes.split(",").map(Number);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms) => `${ms.toFixed(0)} ms`;

/**
 * Loads url in a fresh context (cold cache) and waits for selector (count
 * of them); with next, then clicks next-page and waits for that row.
 */
async function timeLoad(browser, baseUrl, path, selector, count, next) {
  const page = await newPage(browser, baseUrl);
  let bytes = 0;
  let requests = 0;
  page.on("requestfinished", async (req) => {
    const s = await req.sizes().catch(() => undefined);
    if (s) {
      bytes += s.responseBodySize + s.responseHeadersSize;
      requests++;
    }
  });
  const t0 = performance.now();
  await page.goto(baseUrl + path);
  if (count === undefined) await page.waitForSelector(selector, { timeout: 60_000 });
  else await page.waitForFunction(([sel, n]) => document.querySelectorAll(sel).length >= n, [selector, count], { timeout: 60_000 });
  const ms = performance.now() - t0;
  const dcl = await page.evaluate(() => performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd);
  let nextMs;
  if (next) {
    const t1 = performance.now();
    await page.locator("[data-testid=next-page]").click();
    await page.locator(`[data-testid="rows"] tr[data-name="${next}"]`).waitFor({ timeout: 60_000 });
    nextMs = performance.now() - t1;
  }
  await page.waitForLoadState("networkidle").catch(() => {});
  await page.context().close();
  return { ms, dcl, nextMs, bytes, requests };
}

const browser = await launchBrowser();
try {
  // First load against the demo.
  {
    const cupd = await startCupd();
    try {
      // One load first, not counted: the demo's start-up work (WASM
      // compiles, the reconcilers' first pass) is not the UI's.
      await timeLoad(browser, cupd.baseUrl, "/ui/", "[data-testid=types] tbody tr");
      const loads = [];
      for (let i = 0; i < runs; i++) loads.push(await timeLoad(browser, cupd.baseUrl, "/ui/", "[data-testid=types] tbody tr"));
      const m = loads.find((l) => l.ms === median(loads.map((l) => l.ms)));
      console.log(
        `first load of /ui/ (demo, cold browser cache, ${runs} runs): ${(m.bytes / 1024).toFixed(1)} KiB over the wire in ${m.requests} requests; ` +
          `DOMContentLoaded after ${fmt(median(loads.map((l) => l.dcl)))}, types with counts and graph shown after ${fmt(median(loads.map((l) => l.ms)))} (medians; min ${fmt(Math.min(...loads.map((l) => l.ms)))})`,
      );
    } finally {
      await cupd.stop();
    }
  }
  // Lists of generated repositories.
  for (const n of sizes) {
    const dir = mkdtempSync(join(tmpdir(), "cup-ui-figures-"));
    try {
      execFileSync("go", ["run", "./internal/cmd/cupbench", "--setup", dir, "--resources", String(n)], { cwd: repoRoot, stdio: "inherit" });
      const cupd = await startCupd(["--repository", join(dir, "repo.git"), "--config", join(dir, "config")]);
      try {
        const pageSize = Math.min(n, 1000);
        const path = `/ui/apis/bench.cup.dev/v1/namespaces/default/items?pageSize=${pageSize}`;
        const next = n > pageSize ? `item-${String(pageSize).padStart(6, "0")}` : undefined;
        await timeLoad(browser, cupd.baseUrl, path, "[data-testid=rows] tbody tr", pageSize, next); // not counted: cupd's first read
        const loads = [];
        for (let i = 0; i < runs; i++) loads.push(await timeLoad(browser, cupd.baseUrl, path, "[data-testid=rows] tbody tr", pageSize, next));
        console.log(
          `list of ${n} items, ${pageSize} rows a page (${runs} runs): first page shown after ${fmt(median(loads.map((l) => l.ms)))} (median), ` +
            `${(median(loads.map((l) => l.bytes)) / 1024).toFixed(0)} KiB over the wire` +
            (next ? `; the next page after ${fmt(median(loads.map((l) => l.nextMs)))}` : ""),
        );
      } finally {
        await cupd.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  await browser.close();
}
