// The harness of the web UI's tests: a real cupd serving the UI's build
// (test/ts/cupd.js runs `go run ./cmd/cupd serve`, which embeds
// web/dist/app: `make ui` builds it first), Debian's Chromium driven by
// playwright-core, pages that record what a clean page never does, and
// screenshots for the docs.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";

import { chromium } from "playwright-core";

import { repoRoot, startCupd as startGoCupd } from "../ts/cupd.js";

export { repoRoot };

/** The browser: Debian's Chromium unless CHROMIUM names another. */
export const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";

/** Where screenshot() writes: docs/ui/ at the repository's root. */
export const screenshotDir = join(repoRoot, "docs", "ui");

/**
 * Starts cupd with args (`cupd serve --address 127.0.0.1:0 ...args`, the
 * embedded demo by default) and resolves with {baseUrl, stop, stderr}.
 * Fails at once when the UI was not built, since cupd would then answer
 * /ui/ with 503.
 */
export async function startCupd(args = []) {
  if (!existsSync(join(repoRoot, "web", "dist", "app", "index.html"))) {
    throw new Error("the web UI is not built (no web/dist/app/index.html): run `make ui`, or the tests with `make test-ui`");
  }
  return startGoCupd(args);
}

/**
 * Launches a headless Chromium. Playwright gives each launch a fresh
 * temporary profile, removed on close().
 */
export async function launchBrowser() {
  if (!existsSync(chromiumPath)) {
    throw new Error(`no Chromium at ${chromiumPath}: apt-get install chromium, or set CHROMIUM to a Chromium binary`);
  }
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--no-sandbox", // tests run as root in CI
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * Opens a page in a context of its own (no cookies, storage or cache shared
 * with other pages; close it with page.context().close()) that records
 * what a clean page never does:
 *
 *  - otherOrigins: requests to an origin other than baseUrl's (data: and
 *    blob: URLs are the page's own);
 *  - consoleErrors: console messages of type error;
 *  - pageErrors: uncaught exceptions;
 *  - cspViolations: console messages about the Content Security Policy
 *    (of any type: Chromium reports a refused resource as an error, a
 *    report-only violation as a warning).
 *
 * page.problems() returns them; expectClean(page) asserts there are none.
 * colorScheme ("light" or "dark") and viewport ({width, height}) set the
 * context's; the defaults are light and 1280x800.
 */
export async function newPage(browser, baseUrl, { colorScheme = "light", viewport = { width: 1280, height: 800 } } = {}) {
  const origin = new URL(baseUrl).origin;
  const context = await browser.newContext({ baseURL: baseUrl, colorScheme, viewport });
  const page = await context.newPage();
  const problems = { otherOrigins: [], consoleErrors: [], pageErrors: [], cspViolations: [] };
  page.on("request", (req) => {
    const url = new URL(req.url());
    if (url.protocol !== "data:" && url.protocol !== "blob:" && url.origin !== origin) {
      problems.otherOrigins.push(`${req.method()} ${req.url()}`);
    }
  });
  page.on("console", (msg) => {
    const text = msg.text();
    if (/Content[- ]Security[- ]Policy/i.test(text)) problems.cspViolations.push(text);
    else if (msg.type() === "error") problems.consoleErrors.push(text);
  });
  page.on("pageerror", (err) => problems.pageErrors.push(err.stack || String(err)));
  page.problems = () => structuredClone(problems);
  return page;
}

/**
 * Asserts that page recorded no problem (see newPage). allow lists regular
 * expressions of console errors a test expects, such as the one Chromium
 * logs for an API call the test makes fail on purpose.
 */
export function expectClean(page, { allow = [] } = {}) {
  const p = page.problems();
  p.consoleErrors = p.consoleErrors.filter((text) => !allow.some((re) => re.test(text)));
  assert.deepEqual(p, { otherOrigins: [], consoleErrors: [], pageErrors: [], cspViolations: [] }, `the page at ${page.url()} was not clean`);
}

/** Saves a screenshot of page as docs/ui/<name>.png and returns its path. */
export async function screenshot(page, name) {
  mkdirSync(screenshotDir, { recursive: true });
  const path = join(screenshotDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true, animations: "disabled" });
  return path;
}
