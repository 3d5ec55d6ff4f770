// The types view (/ui/) against a real cupd on the demo: every served type
// with its counts per namespace (links to the lists), each type's schema as
// a tree, and the reconcilers' dependency graph as an SVG picture.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { expectClean, launchBrowser, newPage, screenshot, startCupd } from "./harness.js";

describe("types view", () => {
  let cupd;
  let browser;
  before(async () => {
    [cupd, browser] = await Promise.all([startCupd([]), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await cupd?.stop();
  });

  it("shows every type with its counts per namespace, linked to the lists", async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      await page.goto(`${cupd.baseUrl}/ui/`);
      await page.locator('[data-testid="types"]').waitFor({ timeout: 15_000 });
      for (const plural of ["flags", "segments", "services", "bundles", "flagbundles", "configlayers", "serviceconfigs"]) {
        assert.equal(await page.locator(`[data-testid="type-${plural}"]`).count(), 1, `a row for ${plural}`);
      }
      const flags = page.locator('[data-testid="type-flags"]');
      assert.match(await flags.innerText(), /Flag\s+flags\.cup\.dev\/v1alpha1\s+flags\s+fl/);

      // Counts come from ListNamespaces: the demo has 3 flags in default, 2 in staging, 1 in production.
      const count = page.locator('[data-testid="count-flags-default"]');
      await count.waitFor({ timeout: 15_000 });
      assert.equal(await count.innerText(), "default: 3");
      assert.equal(await page.locator('[data-testid="count-flags-staging"]').innerText(), "staging: 2");
      assert.equal(await page.locator('[data-testid="count-flags-production"]').innerText(), "production: 1");
      assert.equal(await page.locator('[data-testid="all-flags"]').innerText(), "all namespaces (6)");
      assert.equal(
        await count.locator("xpath=..").getAttribute("href"),
        "/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags",
      );
      assert.equal(await page.locator('[data-testid="all-flags"]').locator("xpath=..").getAttribute("href"), "/ui/apis/flags.cup.dev/v1alpha1/flags");

      // A count is a link into the app: no page load, the list of that namespace.
      await page.evaluate(() => ((window).__noReload = true));
      await count.click();
      await page.waitForURL("**/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags", { timeout: 10_000 });
      await page.locator('[data-testid="row-dark-mode"]').waitFor({ timeout: 15_000 });
      assert.equal(await page.evaluate(() => (window).__noReload), true, "navigated without a page load");
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("draws the reconcilers' dependency graph as SVG, with a list for screen readers", async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      await page.goto(`${cupd.baseUrl}/ui/`);
      const svg = page.locator('svg[data-testid="graph"]');
      await svg.waitFor({ timeout: 15_000 });
      assert.equal(await svg.getAttribute("role"), "img");
      // Reconcilers in the middle, input types left, output types right.
      for (const r of ["flag-bundles", "service-configs"]) {
        assert.equal(await page.locator(`[data-testid="graph-reconciler-${r}"]`).count(), 1, r);
      }
      for (const t of ["bundles", "flags", "segments", "services", "configlayers"]) {
        assert.equal(await page.locator(`[data-testid="graph-type-in-${t}"]`).count(), 1, `input ${t}`);
      }
      for (const t of ["flagbundles", "serviceconfigs", "services"]) {
        assert.equal(await page.locator(`[data-testid="graph-type-out-${t}"]`).count(), 1, `output ${t}`);
      }
      const box = async (sel) => (await page.locator(sel).boundingBox());
      const left = await box('[data-testid="graph-type-in-flags"]');
      const mid = await box('[data-testid="graph-reconciler-flag-bundles"]');
      const right = await box('[data-testid="graph-type-out-flagbundles"]');
      assert.ok(left.x + left.width < mid.x && mid.x + mid.width < right.x, "inputs left of reconcilers left of outputs");

      // One drawn edge per reconciler, type and direction; kinds as labels, arrows on every edge.
      const edges = page.locator('[data-testid="graph-edge"]');
      assert.equal(await edges.count(), 8);
      const labels = await svg.locator(".edge-label").allTextContents();
      for (const l of ["primary", "mapped: selector", "mapped: selector, reference", "output, exclusive", "output, shared"]) {
        assert.ok(labels.includes(l), `edge label ${l} in ${JSON.stringify(labels)}`);
      }
      assert.equal(await svg.locator('path[marker-end="url(#cup-graph-arrow)"]').count(), 8);
      // Text is SVG text nodes, not markup.
      assert.equal(await svg.locator("foreignObject").count(), 0);

      const list = await page.locator('[data-testid="graph-list"]').innerText();
      assert.match(list, /Reconciler flag-bundles reads Bundle \(bundles\.flags\.cup\.dev; primary\), Flag \(flags\.flags\.cup\.dev; mapped: selector\)/);
      assert.match(list, /Reconciler service-configs .*writes ServiceConfig \(serviceconfigs\.config\.cup\.dev; output, exclusive\), Service \(services\.apps\.cup\.dev; output, shared\)/);

      // A type in the graph is a link to its list.
      await page.locator('[data-testid="graph-type-in-flags"]').click();
      await page.waitForURL("**/ui/apis/flags.cup.dev/v1alpha1/flags", { timeout: 10_000 });
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("says so when cupd runs no reconcilers, and fits 320 px", async () => {
    const page = await newPage(browser, cupd.baseUrl, { viewport: { width: 320, height: 700 } });
    try {
      // An empty GetDependencyGraphResponse in gRPC-Web: an empty message
      // frame, then the trailers frame.
      const trailers = Buffer.from("grpc-status: 0\r\n");
      const frame = (flag, body) => Buffer.concat([Buffer.from([flag, 0, 0, 0, body.length]), body]);
      await page.route("**/cup.v1alpha1.DiscoveryService/GetDependencyGraph", (route) =>
        route.fulfill({
          status: 200,
          headers: { "content-type": "application/grpc-web+proto" },
          body: Buffer.concat([frame(0, Buffer.alloc(0)), frame(0x80, trailers)]),
        }),
      );
      await page.goto(`${cupd.baseUrl}/ui/`);
      const note = page.locator('[data-testid="graph-empty"]');
      await note.waitFor({ timeout: 15_000 });
      assert.equal(await note.innerText(), "cupd runs no reconcilers: no type is derived from another.");
      assert.equal(await page.locator('svg[data-testid="graph"]').count(), 0);
      await page.locator('[data-testid="count-flags-default"]').waitFor({ timeout: 15_000 });
      // The table scrolls inside its wrapper; the page itself does not.
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `the page is ${overflow} px wider than 320`);
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("shows each type's schema as a tree, like cup explain", async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      await page.goto(`${cupd.baseUrl}/ui/`);
      const schema = page.locator('[data-testid="schema-flags"]');
      await schema.waitFor({ timeout: 15_000 });
      assert.equal(await schema.evaluate((d) => d.open), false, "closed at first");
      await schema.locator("summary").first().click();
      assert.equal(await schema.evaluate((d) => d.open), true);

      const field = (path) => schema.locator(`li[data-field="${path}"]`).first();
      // The spec of a Flag, inside the resource: apiVersion, kind, metadata, spec.
      for (const f of ["apiVersion", "kind", "metadata", "spec"]) assert.equal(await schema.locator(`li[data-field="${f}"]`).count(), 1, f);
      const rollout = await field("spec.rollout").innerText();
      assert.match(rollout, /rollout <integer>/);
      assert.match(rollout, /Percentage of requests that see the flag on\./);
      assert.match(rollout, /minimum: 0/);
      assert.match(rollout, /maximum: 100/);
      assert.doesNotMatch(rollout, /required/);
      assert.match(await field("spec.enabled").innerText(), /enabled <boolean>\s+required/);
      assert.match(await field("spec.description").innerText(), /max length: 500/);

      // Arrays of objects fold open into their items' fields.
      const variants = field("spec.variants");
      assert.match(await variants.locator("summary").first().innerText(), /variants <\[\]object>/);
      assert.equal(await variants.locator("details").first().evaluate((d) => d.open), false);
      await variants.locator("summary").first().click();
      assert.match(await field("spec.variants.key").innerText(), /key <string>\s+required[\s\S]*pattern: \^\[a-z0-9-\]\+\$/);

      // Maps say so.
      await page.locator('[data-testid="schema-services"] summary').first().click();
      assert.match(await page.locator('[data-testid="schema-services"] li[data-field="spec.env"]').innerText(), /env <map\[string\]string>/);

      await screenshot(page, "types");
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });
});
