// Resource content is untrusted: anyone who can write to the repository
// writes annotations, spec strings, commit messages and (through the
// message) proposal titles. This test writes <script>, <img onerror> and
// javascript: payloads into every field the UI shows that can hold them
// (names and labels cannot: cupd refuses them), through the API, then
// opens the list, the resource view (edit with a dry-run diff, status,
// history with a diff) and the proposals, and checks that nothing ran:
// window.__xss stays undefined, no dialog opens, no element carries an
// onerror attribute or a javascript: link, no image or script came from
// the content, and the page made no request to another origin and broke
// no Content-Security-Policy rule. The payloads must show, as text.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { clients } from "./apiclient.js";
import { expectClean, launchBrowser, newPage, startCupd } from "./harness.js";
import { eventually, startFakeGitHub } from "./uiutil.js";

const script = "<script>window.__xss=1</script>";
const img = '<img src=x onerror="window.__xss=1">';
const js = "javascript:window.__xss=1";
const all = `${script} ${img} ${js}`;
const flags = { group: "flags.cup.dev", version: "v1alpha1", plural: "flags" };
const tid = (id) => `[data-testid="${id}"]`;

let browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** A page that records dialogs as well as what newPage records. */
async function watchedPage(baseUrl) {
  const page = await newPage(browser, baseUrl);
  const dialogs = [];
  page.on("dialog", async (d) => {
    dialogs.push(`${d.type()}: ${d.message()}`);
    await d.dismiss();
  });
  page.dialogs = dialogs;
  return page;
}

/** Asserts that nothing of the payloads ran or became markup on the page as it is now. */
async function nothingRan(page, where) {
  const found = await page.evaluate(() => ({
    xss: window.__xss,
    onerror: [...document.querySelectorAll("*")].filter((el) => [...el.attributes].some((a) => /^on/i.test(a.name))).map((el) => el.outerHTML.slice(0, 120)),
    jsLinks: [...document.querySelectorAll("a[href], area[href], [src], [action], [formaction]")]
      .map((el) => el.getAttribute("href") ?? el.getAttribute("src") ?? el.getAttribute("action") ?? el.getAttribute("formaction"))
      .filter((u) => /^\s*javascript:/i.test(u)),
    images: [...document.querySelectorAll("img, iframe, object, embed")].map((el) => el.outerHTML.slice(0, 120)),
    scripts: [...document.querySelectorAll("script")].map((s) => s.getAttribute("src") ?? `inline: ${s.textContent.slice(0, 60)}`).filter((src) => !/^\/ui\/assets\/[^/]+\.js$/.test(src)),
  }));
  assert.deepEqual(found, { xss: undefined, onerror: [], jsLinks: [], images: [], scripts: [] }, `on ${where}`);
  assert.deepEqual(page.dialogs, [], `no dialog on ${where}`);
  expectClean(page);
}

/** Asserts that the page shows text as text. */
async function shows(page, text, where) {
  await eventually(async () => assert.ok((await page.locator("main").innerText()).includes(text), `${where} shows ${JSON.stringify(text)}`), {
    what: `${JSON.stringify(text)} on ${where}`,
  });
}

describe("on the demo", () => {
  let cupd;
  let api;
  before(async () => {
    cupd = await startCupd();
    api = clients(cupd.baseUrl).resources;
    // Two revisions: the history has a diff, and every commit message is a payload.
    await api.put({
      ...flags,
      namespace: "default",
      name: "xss",
      resource: {
        metadata: {
          labels: { team: "web" },
          annotations: { "x.cup.dev/script": script, "x.cup.dev/img": img, "x.cup.dev/link": js },
        },
        spec: { enabled: true, description: all, variants: [{ key: "a", weight: 1 }] },
      },
      message: `Add ${all}`,
    });
    await api.put({
      ...flags,
      namespace: "default",
      name: "xss",
      resource: {
        metadata: {
          labels: { team: "web" },
          annotations: { "x.cup.dev/script": script, "x.cup.dev/img": img, "x.cup.dev/link": js, "x.cup.dev/more": `${js}//${img}` },
        },
        spec: { enabled: false, description: `${img}${script}`, rollout: 5 },
      },
      message: `${js} ${img}\n\n${script}`,
    });
  });
  after(async () => {
    await cupd?.stop();
  });

  test("the list shows the resource without running anything", { timeout: 60_000 }, async () => {
    const page = await watchedPage(cupd.baseUrl);
    try {
      await page.goto("/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags");
      await shows(page, "xss", "the list");
      await page.waitForTimeout(300); // time for an image or script, were there one, to load
      await nothingRan(page, "the list");
    } finally {
      await page.context().close();
    }
  });

  test("the resource view: metadata, form, YAML, dry-run diff, status", { timeout: 60_000 }, async () => {
    const page = await watchedPage(cupd.baseUrl);
    try {
      await page.goto("/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/xss");
      await page.locator(tid("yaml")).waitFor({ timeout: 30_000 });
      await shows(page, script, "the metadata");
      await shows(page, img, "the metadata");
      await shows(page, js, "the metadata");
      assert.equal(await page.locator(tid("field-spec.description")).inputValue(), `${img}${script}`);
      assert.ok((await page.locator(tid("yaml")).inputValue()).includes(js));
      await nothingRan(page, "the resource view");

      // A dry run: the diff holds the payloads.
      await page.locator(tid("field-spec.description")).fill(`${all} ${all}`);
      await page.locator(tid("dry-run")).click();
      const diff = await page.locator(`${tid("preview")} ${tid("diff-text")}`).innerText();
      assert.ok(diff.includes(script) && diff.includes(img) && diff.includes(js), diff);
      await nothingRan(page, "the dry-run diff");

      await page.locator(tid("tab-status")).click();
      await page.locator(`${tid("conditions")}, ${tid("no-conditions")}`).first().waitFor();
      await nothingRan(page, "the status tab");
    } finally {
      await page.context().close();
    }
  });

  test("the history: subjects, and the diff between two revisions", { timeout: 60_000 }, async () => {
    const page = await watchedPage(cupd.baseUrl);
    try {
      await page.goto("/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/xss?tab=history");
      await page.locator(tid("history-row-1")).waitFor({ timeout: 30_000 });
      await shows(page, `Add ${all}`, "the history");
      await shows(page, `${js} ${img}`, "the history");
      await page.locator(tid("history-select-0")).check();
      await page.locator(tid("history-select-1")).check();
      const diff = await page.locator(tid("history-diff")).innerText();
      assert.ok(diff.includes(script) && diff.includes(img) && diff.includes(js), diff);
      // The revert's dry run quotes the diff and the message.
      await page.locator(tid("revert-1")).click();
      await page.locator(tid("revert-diff")).waitFor();
      await nothingRan(page, "the history");
    } finally {
      await page.context().close();
    }
  });
});

describe("in proposal mode (fake GitHub): a proposal title", () => {
  let github;
  let cupd;
  before(async () => {
    github = await startFakeGitHub();
    cupd = await startCupd(github.cupdArgs);
    await eventually(async () => assert.equal((await fetch(`${cupd.baseUrl}/ui/`)).status, 200), { timeoutMs: 60_000, what: "cupd to serve" });
  });
  after(async () => {
    await cupd?.stop();
    await github?.stop();
  });

  test("the proposal's title shows as text in the resource view, its write result and the proposals", { timeout: 90_000 }, async () => {
    const { resources, proposals } = clients(cupd.baseUrl);
    const put = await resources.put({
      ...flags,
      namespace: "default",
      name: "xss-proposed",
      resource: { metadata: { annotations: { "x.cup.dev/all": all } }, spec: { enabled: true, description: all } },
      message: all,
    });
    const id = put.result.proposal.id;
    assert.equal((await proposals.getProposal({ id })).proposal.title, all, "the title is the message's subject");

    const page = await watchedPage(cupd.baseUrl);
    try {
      // Read on the proposal's branch, the resource lists its proposal.
      await page.goto("/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/dark-mode");
      await page.locator(tid("yaml")).waitFor({ timeout: 30_000 });
      // The editor offers the proposal by its title.
      await page.locator(tid("change-set")).waitFor({ timeout: 15_000 });
      const options = await page.locator(`${tid("change-set")} option`).allInnerTexts();
      assert.ok(
        options.some((o) => o.includes(all)),
        `the proposal is offered: ${options}`,
      );
      // A write to its change set: the result names the proposal.
      await page.locator(tid("change-set")).selectOption(put.result.branch);
      await page.locator(tid("on-branch")).waitFor();
      await page.locator(tid("field-spec.rollout")).fill("7");
      await page.locator(tid("dry-run")).click();
      await page.locator(tid("save")).click();
      await page.locator(`${tid("result")} ${tid("proposal-link")} a`).waitFor({ timeout: 30_000 });
      await shows(page, all, "the write's result");
      await nothingRan(page, "the resource view in proposal mode");

      await page.goto("/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/xss-proposed?tab=history");
      await page.locator("main h1").waitFor();
      await page.waitForTimeout(500);
      await nothingRan(page, "the history of a resource only in a proposal");

      await page.goto("/ui/proposals");
      await shows(page, all, "the proposals");
      await page.waitForTimeout(300);
      await nothingRan(page, "the proposals");
    } finally {
      await page.context().close();
    }
  });
});
