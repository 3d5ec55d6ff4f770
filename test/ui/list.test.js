// The list view against a real cupd on the demo: a namespace and all of
// them, the namespace switcher, the label selector (and cupd's error for a
// bad one), server-side paging with shareable page URLs, live updates from
// another client's writes, the "New" button, and the main screenshots.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { expectClean, launchBrowser, newPage, screenshot, startCupd } from "./harness.js";
import { clients, flagsType, putFlag } from "./apiclient.js";
import { rowNames, waitForLive, waitForRows } from "./uiutil.js";

const flagsIn = (ns) => `/ui/apis/flags.cup.dev/v1alpha1/namespaces/${ns}/flags`;
const allFlags = "/ui/apis/flags.cup.dev/v1alpha1/flags";
const pad = (i) => String(i).padStart(2, "0");
/** The 30 flags made for paging, in namespace "paging": load-00 … load-29. */
const loadNames = Array.from({ length: 30 }, (_, i) => `load-${pad(i)}`);

describe("list view", () => {
  let cupd;
  let browser;
  let api;
  before(async () => {
    [cupd, browser] = await Promise.all([startCupd([]), launchBrowser()]);
    api = clients(cupd.baseUrl);
    // Each write is a commit; in order, so that cupd's listing has them all.
    for (const [i, name] of loadNames.entries()) {
      await putFlag(api.resources, "paging", name, { enabled: i % 2 === 0, rollout: i }, { tier: i % 3 === 0 ? "gold" : "plain" });
    }
  });
  after(async () => {
    await browser?.close();
    await cupd?.stop();
  });

  async function open(path, opts) {
    const page = await newPage(browser, cupd.baseUrl, opts);
    await page.goto(cupd.baseUrl + path);
    return page;
  }

  it("lists a namespace's resources with links, labels and versions", async () => {
    const page = await open(flagsIn("default"));
    try {
      await waitForRows(page, ["dark-mode", "new-checkout", "search-v2"]);
      const headers = await page.locator('[data-testid="rows"] thead th').allTextContents();
      // The type's printer columns of priority 0 (Description is -o wide only), then labels, age, version.
      assert.deepEqual(headers, ["Name", "Enabled", "Rollout", "Labels", "Age", "Resource version"]);
      assert.equal(await page.locator('[data-testid="rows"] thead th[scope="col"]').count(), 6);
      const row = page.locator('[data-testid="row-dark-mode"]');
      assert.equal(await row.locator("a").getAttribute("href"), `${flagsIn("default")}/dark-mode`);
      assert.equal(await row.locator(".chip").innerText(), "team=web");
      const got = await api.resources.get({ group: "flags.cup.dev", version: "v1alpha1", plural: "flags", namespace: "default", name: "dark-mode" });
      assert.equal(await row.locator("code.sha").getAttribute("title"), got.resource.metadata.resourceVersion);
      const cells = await row.locator("td").allInnerTexts();
      assert.deepEqual(cells.slice(1, 3), [String(got.resource.spec.enabled), String(got.resource.spec.rollout)]);
      // AGE: the time of the commit that last changed it, as its history says.
      const h = await api.resources.history({ group: "flags.cup.dev", version: "v1alpha1", plural: "flags", namespace: "default", name: "dark-mode", pageSize: 1 });
      assert.equal(Date.parse(await row.locator("time").getAttribute("datetime")), Date.parse(h.entries[0].time));
      assert.match(cells[4], /^[0-9]+[smhd]$/);
      assert.match(await page.locator('[data-testid="count"]').innerText(), /^3 resources on page 1 of 3 in this namespace\.$/);
      assert.equal(await page.locator('[data-testid="namespace-select"]').inputValue(), "default");
      await screenshot(page, "list");
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("switches namespaces, and shows all of them with a namespace column", async () => {
    const page = await open(flagsIn("default"));
    try {
      await waitForRows(page, ["dark-mode", "new-checkout", "search-v2"]);
      const select = page.locator('[data-testid="namespace-select"]');
      const options = await select.locator("option").evaluateAll((os) => os.map((o) => [o.value, o.textContent]));
      assert.deepEqual(options, [
        ["", "All namespaces"],
        ["default", "default"],
        ["paging", "paging"],
        ["production", "production"],
        ["staging", "staging"],
      ]);
      await select.selectOption("staging");
      await page.waitForURL(`**${flagsIn("staging")}`, { timeout: 10_000 });
      await waitForRows(page, ["dark-mode", "new-checkout"]);

      await select.selectOption("");
      await page.waitForURL(`**${allFlags}`, { timeout: 10_000 });
      await page.locator('[data-testid="row-production-new-checkout"]').waitFor({ timeout: 15_000 });
      const headers = await page.locator('[data-testid="rows"] thead th').allTextContents();
      assert.deepEqual(headers, ["Name", "Namespace", "Enabled", "Rollout", "Labels", "Age", "Resource version"]);
      const rows = await page.locator('[data-testid="rows"] tbody tr').evaluateAll((trs) => trs.map((tr) => `${tr.dataset.namespace}/${tr.dataset.name}`));
      assert.deepEqual(rows, [
        "default/dark-mode",
        "default/new-checkout",
        "default/search-v2",
        ...loadNames.map((n) => `paging/${n}`),
        "production/new-checkout",
        "staging/dark-mode",
        "staging/new-checkout",
      ]);
      // Back goes to the namespace it came from.
      await page.goBack();
      await page.waitForURL(`**${flagsIn("staging")}`, { timeout: 10_000 });
      await waitForRows(page, ["dark-mode", "new-checkout"]);
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("filters with a label selector kept in the URL, and shows cupd's error for a bad one", async () => {
    const page = await open(flagsIn("paging"));
    try {
      await rowNamesSettled(page, 30);
      const input = page.locator('[data-testid="selector-input"]');
      await input.fill("tier=gold");
      await input.press("Enter");
      await page.waitForURL(/labelSelector=tier%3Dgold/, { timeout: 10_000 });
      const gold = loadNames.filter((_, i) => i % 3 === 0);
      await waitForRows(page, gold);
      assert.match(await page.locator('[data-testid="count"]').innerText(), /^10 resources on page 1\.$/);

      // The URL alone brings the same view back.
      await page.goto(`${cupd.baseUrl}${flagsIn("paging")}?labelSelector=${encodeURIComponent("tier notin (gold),!stage")}`);
      await waitForRows(page, loadNames.filter((_, i) => i % 3 !== 0));
      assert.equal(await input.inputValue(), "tier notin (gold),!stage");

      // A selector cupd refuses: its error, and the box marked invalid.
      await input.fill("tier in (gold");
      await page.locator('[data-testid="selector-apply"]').click();
      const error = page.locator('[data-testid="list-error"] .error');
      await error.waitFor({ timeout: 10_000 });
      assert.match(await error.innerText(), /InvalidArgument: .*label_selector/i);
      assert.equal(await input.getAttribute("aria-invalid"), "true");
      assert.equal(await page.locator('[data-testid="rows"]').count(), 0);

      await page.locator('[data-testid="selector-clear"]').click();
      await rowNamesSettled(page, 30);
      assert.equal(new URL(page.url()).searchParams.get("labelSelector"), null);
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("pages on the server, with page URLs that can be shared", async () => {
    const page = await open(`${flagsIn("paging")}?pageSize=10`);
    try {
      await waitForRows(page, loadNames.slice(0, 10));
      assert.match(await page.locator('[data-testid="count"]').innerText(), /^10 resources on page 1 of 30 in this namespace\.$/);
      assert.equal(await page.locator('[data-testid="prev-page"]').isDisabled(), true);

      await page.locator('[data-testid="next-page"]').click();
      await waitForRows(page, loadNames.slice(10, 20));
      assert.match(await page.locator('[data-testid="count"]').innerText(), /on page 2 of 30/);
      const page2 = page.url();
      assert.ok(new URL(page2).searchParams.get("page"), "the page token is in the URL");
      assert.equal(new URL(page2).searchParams.get("pageSize"), "10");

      await page.locator('[data-testid="next-page"]').click();
      await waitForRows(page, loadNames.slice(20, 30));
      assert.equal(await page.locator('[data-testid="next-page"]').isDisabled(), true, "no page after the last");

      await page.locator('[data-testid="prev-page"]').click();
      await waitForRows(page, loadNames.slice(10, 20));
      assert.equal(page.url(), page2);
      await page.locator('[data-testid="prev-page"]').click();
      await waitForRows(page, loadNames.slice(0, 10));

      // Page 2's URL, opened afresh (as from a shared link), shows page 2;
      // its Previous goes to the first page.
      const other = await newPage(browser, cupd.baseUrl);
      try {
        await other.goto(page2);
        await waitForRows(other, loadNames.slice(10, 20));
        assert.equal(await other.locator('[data-testid="prev-page"]').innerText(), "First page");
        await other.locator('[data-testid="prev-page"]').click();
        await waitForRows(other, loadNames.slice(0, 10));
        expectClean(other);
      } finally {
        await other.context().close();
      }

      // The page size can be chosen; it is kept in the URL.
      await page.locator('[data-testid="page-size"]').selectOption("20");
      await page.waitForURL(/pageSize=20/, { timeout: 10_000 });
      await waitForRows(page, loadNames.slice(0, 20));
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("updates live: rows appear, change and disappear as another client writes", async () => {
    const page = await open(flagsIn("default"));
    try {
      await waitForRows(page, ["dark-mode", "new-checkout", "search-v2"]);
      await waitForLive(page);
      await page.evaluate(() => ((window).__noReload = true));

      // A new flag that sorts into the page appears in its place.
      await putFlag(api.resources, "default", "canary", { enabled: true }, { team: "web" });
      await waitForRows(page, ["canary", "dark-mode", "new-checkout", "search-v2"]);
      assert.equal(await page.locator('[data-testid="row-canary"] .chip').innerText(), "team=web");

      // A changed flag shows its new labels and version, and flashes.
      const before = await page.locator('[data-testid="row-dark-mode"] code.sha').getAttribute("title");
      const put = await putFlag(api.resources, "default", "dark-mode", { enabled: true, rollout: 10 }, { team: "web", stage: "beta" });
      const row = page.locator('[data-testid="row-dark-mode"]');
      await page.waitForFunction(
        (rv) => document.querySelector('[data-testid="row-dark-mode"] code.sha')?.getAttribute("title") === rv,
        put.resource.metadata.resourceVersion,
        { timeout: 15_000 },
      );
      assert.notEqual(put.resource.metadata.resourceVersion, before);
      assert.deepEqual(await row.locator(".chip").allTextContents(), ["stage=beta", "team=web"]);
      assert.match((await row.getAttribute("class")) ?? "", /\bflash\b/);
      // The flash is brief.
      await page.waitForFunction(() => !document.querySelector('[data-testid="row-dark-mode"]')?.classList.contains("flash"), null, { timeout: 5_000 });

      // A deleted flag disappears.
      await api.resources.delete({ group: "flags.cup.dev", version: "v1alpha1", plural: "flags", namespace: "default", name: "search-v2" });
      await waitForRows(page, ["canary", "dark-mode", "new-checkout"]);

      // Changes elsewhere do not touch this namespace's rows.
      await putFlag(api.resources, "staging", "elsewhere", { enabled: false });
      await putFlag(api.resources, "default", "zz-last", { enabled: false });
      await waitForRows(page, ["canary", "dark-mode", "new-checkout", "zz-last"]);

      assert.equal(await page.evaluate(() => (window).__noReload), true, "no page load");
      assert.equal(await page.locator('[data-testid="live"]').getAttribute("data-state"), "live");
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("updates live across all namespaces and with a selector, within the page only", async () => {
    const page = await open(`${allFlags}?labelSelector=${encodeURIComponent("team=payments")}`);
    try {
      await page.locator('[data-testid="row-production-new-checkout"]').waitFor({ timeout: 15_000 });
      await waitForLive(page);
      const names = async () =>
        page.locator('[data-testid="rows"] tbody tr').evaluateAll((trs) => trs.map((tr) => `${tr.dataset.namespace}/${tr.dataset.name}`));
      assert.deepEqual(await names(), ["default/new-checkout", "production/new-checkout", "staging/new-checkout"]);
      // One that starts to match appears; one that stops matching goes.
      await putFlag(api.resources, "production", "billing", { enabled: true }, { team: "payments" });
      await putFlag(api.resources, "staging", "new-checkout", { enabled: true }, { team: "growth" });
      await page.waitForFunction(
        () => [...document.querySelectorAll('[data-testid="rows"] tbody tr')].map((tr) => `${tr.dataset.namespace}/${tr.dataset.name}`).join(" ") ===
          "default/new-checkout production/billing production/new-checkout",
        null,
        { timeout: 15_000 },
      ).catch(async (e) => assert.fail(`rows ${JSON.stringify(await names())}: ${e.message}`));

      // On a page of a paged listing, a new resource that sorts after the
      // page's last row belongs to a later page: it does not show here.
      const paged = await newPage(browser, cupd.baseUrl);
      try {
        await paged.goto(`${cupd.baseUrl}${flagsIn("paging")}?pageSize=10`);
        await waitForRows(paged, loadNames.slice(0, 10));
        await waitForLive(paged);
        await putFlag(api.resources, "paging", "load-99", { enabled: true });
        await putFlag(api.resources, "paging", "load-05a", { enabled: true });
        // load-05a joins the page; the page still shows 10 rows, so load-09
        // is held but not rendered, and the overflow is said.
        const want = [...loadNames.slice(0, 6), "load-05a", ...loadNames.slice(6, 9)];
        await waitForRows(paged, want);
        assert.equal((await rowNames(paged)).includes("load-99"), false);
        assert.match(await paged.locator('[data-testid="overflow"]').innerText(), /^1 more resource joined this page since it was listed\./);
        // Showing the page again lists it afresh: load-05a in its place, load-09 on the next page.
        // The rows are those shown before, so the notice going is what
        // says that the listing came.
        await paged.locator('[data-testid="overflow"] button').click();
        await paged.locator('[data-testid="overflow"]').waitFor({ state: "detached", timeout: 15_000 });
        await waitForRows(paged, [...loadNames.slice(0, 6), "load-05a", ...loadNames.slice(6, 9)]);
        expectClean(paged);
      } finally {
        await paged.context().close();
      }
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("says when the watch fails, watches again, and lists again when its revision is gone", async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      const calls = { List: 0, Watch: 0 };
      page.on("request", (req) => {
        const m = /\/cup\.v1alpha1\.ResourceService\/(List|Watch)$/.exec(new URL(req.url()).pathname);
        if (m) calls[m[1]]++;
      });
      // The first watch is cut (a network error); the second is refused
      // with FAILED_PRECONDITION, as cupd refuses a revision that is no
      // longer on the branch; the third goes through.
      let watches = 0;
      await page.route("**/cup.v1alpha1.ResourceService/Watch", async (route) => {
        watches++;
        if (watches === 1) return route.abort("connectionreset");
        if (watches === 2) {
          return route.fulfill({
            status: 200,
            headers: { "content-type": "application/grpc-web+proto", "grpc-status": "9", "grpc-message": "revision%20gone" },
            body: "",
          });
        }
        return route.continue();
      });
      await page.goto(cupd.baseUrl + flagsIn("default"));
      await page.locator('[data-testid="row-dark-mode"]').waitFor({ timeout: 15_000 });
      const notice = page.locator('[data-testid="live-notice"]');
      await notice.filter({ hasText: /Live updates were interrupted .*; trying again in 1 s\./ }).waitFor({ timeout: 10_000 });
      await waitForLive(page);
      assert.equal(await notice.count(), 0, "the notice goes once the watch is back");
      assert.equal(watches, 3);
      assert.equal(calls.List, 2, "listed again after FAILED_PRECONDITION");
      // And it is live indeed.
      await putFlag(api.resources, "default", "after-retry", { enabled: true });
      await page.locator('[data-testid="row-after-retry"]').waitFor({ timeout: 15_000 });
      await api.resources.delete({ ...flagsType, namespace: "default", name: "after-retry" });
      await page.locator('[data-testid="row-after-retry"]').waitFor({ state: "detached", timeout: 15_000 });
      expectClean(page, { allow: [/ERR_CONNECTION_RESET|Failed to load resource/] });
    } finally {
      await page.context().close();
    }
  });

  it("stops watching when the view is left", async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      const open = new Set();
      page.on("request", (req) => {
        if (req.url().endsWith("/cup.v1alpha1.ResourceService/Watch")) open.add(req);
      });
      page.on("requestfailed", (req) => open.delete(req));
      page.on("requestfinished", (req) => open.delete(req));
      await page.goto(cupd.baseUrl + flagsIn("default"));
      await waitForLive(page);
      assert.equal(open.size, 1, "one watch while the list is shown");
      await page.locator("header nav a", { hasText: "Types" }).click();
      await page.locator('[data-testid="types"]').waitFor({ timeout: 15_000 });
      const deadline = Date.now() + 5_000;
      while (open.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal(open.size, 0, "the watch was aborted");
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("offers New when cupd allows writes, and asks for a name", async () => {
    const page = await open(flagsIn("default"));
    try {
      await page.locator('[data-testid="list-toolbar"][data-access="put"]').waitFor({ timeout: 15_000 });
      await page.locator('[data-testid="new"]').click();
      const name = page.locator('[data-testid="new-name"]');
      await name.fill("Not A Name");
      await name.press("Enter");
      assert.equal(await name.getAttribute("aria-invalid"), "true");
      assert.match(page.url(), /\/namespaces\/default\/flags$/);
      await name.fill("brand-new");
      await name.press("Enter");
      await page.waitForURL(`**${flagsIn("default")}/brand-new?new=1`, { timeout: 10_000 });
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("is readable at 320 px and in the dark theme", async () => {
    const narrow = await open(flagsIn("default"), { viewport: { width: 320, height: 700 } });
    try {
      await narrow.locator('[data-testid="row-dark-mode"]').waitFor({ timeout: 15_000 });
      // The table scrolls inside its wrapper; the page itself does not.
      const overflow = await narrow.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `the page is ${overflow} px wider than 320`);
      for (const id of ["namespace-select", "selector-input", "page-size"]) {
        const b = await narrow.locator(`[data-testid="${id}"]`).boundingBox();
        assert.ok(b && b.x >= 0 && b.x + b.width <= 320, `${id} fits: ${JSON.stringify(b)}`);
      }
      await screenshot(narrow, "list-320");
      expectClean(narrow);
    } finally {
      await narrow.context().close();
    }
    const dark = await open(flagsIn("default"), { colorScheme: "dark" });
    try {
      await dark.locator('[data-testid="row-dark-mode"]').waitFor({ timeout: 15_000 });
      const [bg, fg] = await dark.evaluate(() => {
        const s = getComputedStyle(document.body);
        return [s.backgroundColor, s.color];
      });
      assert.equal(bg, "rgb(15, 20, 25)", "the dark background");
      assert.equal(fg, "rgb(230, 237, 243)");
      await screenshot(dark, "list-dark");
      expectClean(dark);
    } finally {
      await dark.context().close();
    }
  });

  it("is keyboard reachable: every control has a label and takes the focus", async () => {
    const page = await open(flagsIn("default"));
    try {
      await page.locator('[data-testid="row-dark-mode"]').waitFor({ timeout: 15_000 });
      await page.locator('[data-testid="list-toolbar"][data-access="put"]').waitFor({ timeout: 15_000 });
      const reached = new Set();
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press("Tab");
        const id = await page.evaluate(() => document.activeElement?.getAttribute("data-testid") ?? document.activeElement?.textContent?.trim());
        if (id) reached.add(id);
      }
      for (const id of ["namespace-select", "selector-input", "selector-apply", "page-size", "new", "dark-mode"]) {
        assert.ok(reached.has(id), `${id} is reached with Tab (reached ${JSON.stringify([...reached])})`);
      }
      const unlabelled = await page.evaluate(() =>
        [...document.querySelectorAll("main input, main select, main button")]
          .filter((el) => !(el.labels?.length || el.getAttribute("aria-label") || el.textContent.trim()))
          .map((el) => el.outerHTML),
      );
      assert.deepEqual(unlabelled, []);
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });
});

/** Waits until the list has n rows. */
async function rowNamesSettled(page, n) {
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="rows"] tbody tr').length === n, n, { timeout: 15_000 });
}
