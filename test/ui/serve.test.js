// How cupd serves the web UI, as Chromium sees it: GET / sends the browser
// to /ui/, the app renders there and at its deep links, under a Content
// Security Policy that it does not violate, with its assets compressed and
// cached for good, and without a request to another origin.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { expectClean, launchBrowser, newPage, startCupd } from "./harness.js";

const csp =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

let cupd;
let browser;

before(async () => {
  [cupd, browser] = await Promise.all([startCupd(), launchBrowser()]);
});

after(async () => {
  await browser?.close();
  await cupd?.stop();
});

/** Waits until the app rendered something into #app. */
async function rendered(page) {
  await page.waitForFunction(() => (document.querySelector("#app")?.children.length ?? 0) > 0, null, { timeout: 30_000 });
}

test("GET / sends a browser to the app at /ui/, served with its security headers", { timeout: 90_000 }, async () => {
  const page = await newPage(browser, cupd.baseUrl);
  try {
    const assets = [];
    page.on("response", (res) => {
      if (new URL(res.url()).pathname.startsWith("/ui/assets/")) assets.push(res);
    });
    const res = await page.goto("/");
    await rendered(page);
    assert.equal(new URL(page.url()).pathname, "/ui/");
    const redirect = await res.request().redirectedFrom()?.response();
    assert.equal(redirect?.status(), 302, "GET / answered the browser with a redirect");

    assert.equal(res.status(), 200);
    const h = res.headers();
    assert.equal(h["content-security-policy"], csp);
    assert.match(h["content-security-policy"], /frame-ancestors 'none'/);
    assert.equal(h["x-content-type-options"], "nosniff");
    assert.equal(h["x-frame-options"], "DENY");
    assert.equal(h["referrer-policy"], "no-referrer");
    assert.equal(h["cache-control"], "no-cache");
    assert.ok(h["etag"], "index.html has an ETag");

    const scripts = assets.filter((r) => r.url().endsWith(".js"));
    assert.ok(scripts.length > 0, `the app loaded no script from /ui/assets/: ${assets.map((r) => r.url())}`);
    for (const r of scripts) {
      const ah = await r.allHeaders();
      assert.equal(r.status(), 200, r.url());
      assert.equal(ah["content-encoding"], "gzip", `${r.url()} is served gzip`);
      assert.equal(ah["cache-control"], "public, max-age=31536000, immutable", r.url());
      assert.equal(ah["content-security-policy"], csp, r.url());
    }
    expectClean(page);
  } finally {
    await page.context().close();
  }
});

test("a deep link into the app loads the app", { timeout: 60_000 }, async () => {
  const page = await newPage(browser, cupd.baseUrl, { colorScheme: "dark", viewport: { width: 390, height: 844 } });
  try {
    const res = await page.goto("/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags");
    assert.equal(res.status(), 200);
    assert.equal(res.headers()["content-security-policy"], csp);
    await rendered(page);
    expectClean(page);
  } finally {
    await page.context().close();
  }
});

test("a missing asset is 404, not the app", { timeout: 30_000 }, async () => {
  const res = await fetch(`${cupd.baseUrl}/ui/assets/no-such-file.js`);
  assert.equal(res.status, 404);
  assert.equal(res.headers.get("content-security-policy"), csp);
  const post = await fetch(`${cupd.baseUrl}/ui/`, { method: "POST" });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get("allow"), "GET, HEAD");
});
