// The resource view in Chromium against a real cupd on its demo: edit
// through the schema form and through the YAML (each follows the other),
// the dry-run diff, save and the new commit, a schema error on its field,
// a conflict with a concurrent write (who changed it, reload), history
// with a diff between two revisions and revert, exact numbers, and a
// proposal in proposal mode (fake GitHub).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { expectClean, launchBrowser, newPage, screenshot, startCupd } from "./harness.js";
import { clients, putFlag } from "./apiclient.js";
import { eventually, startFakeGitHub, writePolicy } from "./uiutil.js";

const flagPath = (ns, name) => `/ui/apis/flags.cup.dev/v1alpha1/namespaces/${ns}/flags/${name}`;
const flagRest = (base, ns, name) => `${base}/apis/flags.cup.dev/v1alpha1/namespaces/${ns}/flags/${name}`;
const tid = (id) => `[data-testid="${id}"]`;

let browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** Opens the resource view at path and waits for the form. */
async function open(page, path) {
  await page.goto(path);
  await page.locator(tid("yaml")).waitFor({ timeout: 30_000 });
}

/** The YAML editor's text. */
const yaml = (page) => page.locator(tid("yaml")).inputValue();

/** Waits until the YAML editor's text matches re. */
async function yamlMatches(page, re) {
  await eventually(async () => assert.match(await yaml(page), re), { timeoutMs: 5000, what: `the YAML to match ${re}` });
}

/** The full commit the result note names (the Commit component's title). */
async function writtenCommit(scope) {
  const sha = await scope.locator(`${tid("result")} ${tid("commit")} code`).getAttribute("title", { timeout: 15_000 });
  assert.match(sha, /^[0-9a-f]{40}$/);
  return sha;
}

/** The newest history entry of a flag. */
async function newest(api, ns, name) {
  const h = await api.resources.history({ group: "flags.cup.dev", version: "v1alpha1", plural: "flags", namespace: ns, name, pageSize: 1 });
  return h.entries[0];
}

describe("on the demo", () => {
  let cupd;
  let api;
  before(async () => {
    cupd = await startCupd();
    api = clients(cupd.baseUrl);
  });
  after(async () => {
    await cupd?.stop();
  });

  test("edit through the form: the YAML follows, the dry run shows the diff, Save commits", { timeout: 90_000 }, async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      await open(page, flagPath("default", "dark-mode"));
      await yamlMatches(page, /^  enabled: false$/m);
      const rv = await page.locator(tid("meta-rv")).innerText();

      await page.locator(tid("field-spec.enabled")).check();
      await yamlMatches(page, /^  enabled: true$/m);
      await page.locator(tid("field-spec.description")).fill("Dark colours, everywhere.");
      await yamlMatches(page, /^  description: Dark colours, everywhere\.$/m);
      await page.locator(tid("field-spec.rollout")).fill("25");
      await yamlMatches(page, /^  rollout: 25$/m);
      // A label through the key/value rows.
      await page.locator(tid("labels-add")).click();
      await page.locator(tid("labels-key-1")).fill("tier");
      await page.locator(tid("labels-value-1")).fill("gold");
      await yamlMatches(page, /^    tier: gold$/m);
      await screenshot(page, "resource-edit");

      await page.locator(tid("dry-run")).click();
      const diff = page.locator(`${tid("preview")} ${tid("diff-text")}`);
      await diff.waitFor();
      const text = await diff.innerText();
      assert.match(text, /^-  enabled: false$/m);
      assert.match(text, /^\+  enabled: true$/m);
      assert.match(text, /^\+  rollout: 25$/m);
      assert.match(text, /^\+    tier: gold$/m);
      assert.ok((await diff.locator(".add").count()) >= 3, "added lines are marked");
      assert.ok((await diff.locator(".del").count()) >= 2, "removed lines are marked");
      // Nothing was written by the dry run.
      const before = await (await fetch(flagRest(cupd.baseUrl, "default", "dark-mode"))).json();
      assert.equal(before.spec.enabled, false);
      assert.equal(before.metadata.resourceVersion, rv);
      await screenshot(page, "resource-diff");

      await page.locator(tid("message")).fill("Dark mode for a quarter of requests");
      await page.locator(tid("save")).click();
      const commit = await writtenCommit(page);

      // The API reads the new value, and the commit is the one the UI names.
      const after = await (await fetch(flagRest(cupd.baseUrl, "default", "dark-mode"))).json();
      assert.deepEqual(after.spec, { description: "Dark colours, everywhere.", enabled: true, rollout: 25 });
      assert.deepEqual(after.metadata.labels, { team: "web", tier: "gold" });
      const h = await newest(api, "default", "dark-mode");
      assert.equal(h.commit, commit);
      assert.equal(h.subject, "Dark mode for a quarter of requests");
      // The view reloads the new version.
      await eventually(async () => assert.equal(await page.locator(tid("meta-rv")).innerText(), after.metadata.resourceVersion), {
        what: "the new resourceVersion in the view",
      });
      assert.equal(await page.locator(tid("field-spec.rollout")).inputValue(), "25");
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  test("edit through the YAML: the form follows; YAML that does not parse leaves the form alone", { timeout: 60_000 }, async () => {
    const page = await newPage(browser, cupd.baseUrl, { colorScheme: "dark" });
    try {
      await open(page, flagPath("default", "search-v2"));
      const text = (await yaml(page))
        .replace("rollout: 100", "rollout: 40")
        .replace("enabled: true", "enabled: false\n  variants:\n    - key: blue\n      weight: 3");
      await page.locator(tid("yaml")).fill(text);
      await eventually(async () => assert.equal(await page.locator(tid("field-spec.rollout")).inputValue(), "40"), { what: "rollout 40 in the form" });
      assert.equal(await page.locator(tid("field-spec.enabled")).isChecked(), false);
      assert.equal(await page.locator(tid("field-spec.variants[0].key")).inputValue(), "blue");
      assert.equal(await page.locator(tid("field-spec.variants[0].weight")).inputValue(), "3");

      await page.locator(tid("yaml")).fill(text.replace("rollout: 40", "rollout: [41"));
      await page.locator(tid("yaml-error")).waitFor();
      assert.match(await page.locator(tid("yaml-error")).innerText(), /line \d+/);
      assert.equal(await page.locator(tid("yaml")).getAttribute("aria-invalid"), "true");
      assert.equal(await page.locator(tid("field-spec.rollout")).inputValue(), "40", "the form keeps the last YAML that parsed");
      assert.ok(await page.locator(tid("dry-run")).isDisabled(), "nothing is sent while the YAML does not parse");

      // A form edit now writes the YAML from the form again.
      await page.locator(tid("field-spec.rollout")).fill("45");
      await yamlMatches(page, /^  rollout: 45$/m);
      assert.equal(await page.locator(tid("yaml-error")).count(), 0);
      // Removing the variant through the form.
      await page.locator(tid("remove-spec.variants[0]")).click();
      await eventually(async () => assert.doesNotMatch(await yaml(page), /variants/), { what: "the variant gone from the YAML" });
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  test("a schema error lands on its field: the browser's bound checks, then the server's", { timeout: 60_000 }, async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      await open(page, flagPath("staging", "dark-mode"));
      // Out of bounds: the browser says so on the field and sends nothing.
      await page.locator(tid("field-spec.rollout")).fill("150");
      await page.locator(tid("error-spec.rollout")).waitFor();
      assert.match(await page.locator(tid("error-spec.rollout")).innerText(), /at most 100/);
      assert.equal(await page.locator(tid("field-spec.rollout")).getAttribute("aria-invalid"), "true");
      assert.ok(await page.locator(tid("dry-run")).isDisabled());
      await page.locator(tid("field-spec.rollout")).fill("15");
      await page.locator(tid("error-spec.rollout")).waitFor({ state: "detached" });

      // A wrong type the form cannot make (through the YAML): the form shows
      // the value raw, and cupd's schema violation lands on that field.
      const text = (await yaml(page)).replace(/enabled: (true|false)/, 'enabled: "yes"');
      await page.locator(tid("yaml")).fill(text);
      const field = page.locator(tid("field-spec.enabled"));
      await eventually(async () => assert.equal(await field.evaluate((el) => el.tagName), "TEXTAREA"), { what: "the raw editor for enabled" });
      await page.locator(tid("dry-run")).click();
      const err = page.locator(tid("error-spec.enabled"));
      await err.waitFor();
      assert.match(await err.innerText(), /expected boolean/);
      assert.equal(await field.getAttribute("aria-invalid"), "true");
      const describedBy = (await field.getAttribute("aria-describedby")).split(" ");
      assert.ok(describedBy.includes(await err.getAttribute("id")), "the error describes the field");
      await page.locator(tid("field-errors-note")).waitFor();
      assert.equal(await page.locator(tid("preview")).count(), 0, "no diff for a refused write");

      // A required field removed: cupd names the object; the form marks it.
      await page.locator(tid("yaml")).fill(text.replace(/^  enabled: "yes"\n/m, ""));
      await page.locator(tid("error-spec.enabled")).waitFor(); // the browser's "is required"
      assert.match(await page.locator(tid("error-spec.enabled")).innerText(), /required/);
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  test("a conflict: another client writes between load and save; the view says who and reloads", { timeout: 90_000 }, async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      await open(page, flagPath("production", "new-checkout"));
      await page.locator(tid("field-spec.rollout")).fill("60");
      await page.locator(tid("dry-run")).click();
      await page.locator(tid("save")).waitFor();

      // Another client (Connect, from Node) writes meanwhile.
      const other = await api.resources.put({
        group: "flags.cup.dev",
        version: "v1alpha1",
        plural: "flags",
        namespace: "production",
        name: "new-checkout",
        resource: { metadata: { labels: { team: "payments" } }, spec: { description: "The redesigned checkout flow.", enabled: true, rollout: 70 } },
        message: "Rollout to 70 from the release script",
      });
      const otherCommit = other.result.commit;
      const h = await newest(api, "production", "new-checkout");
      assert.equal(h.commit, otherCommit);

      await page.locator(tid("save")).click();
      const conflict = page.locator(tid("conflict"));
      await conflict.waitFor();
      const said = await conflict.innerText();
      assert.ok(said.includes(h.authorName), `the conflict names the author ${h.authorName}: ${said}`);
      assert.ok(said.includes(otherCommit.slice(0, 10)), "the conflict names the commit");
      assert.ok(said.includes("Rollout to 70 from the release script"), "the conflict quotes the subject");
      await screenshot(page, "resource-conflict");
      // Nothing of the user's was written.
      assert.equal((await (await fetch(flagRest(cupd.baseUrl, "production", "new-checkout"))).json()).spec.rollout, 70);

      // Reload: the new version in the editor, the user's edits kept aside.
      await page.locator(tid("reload")).click();
      await eventually(async () => assert.equal(await page.locator(tid("field-spec.rollout")).inputValue(), "70"), { what: "the reloaded version" });
      assert.equal(await page.locator(tid("meta-rv")).innerText(), (await newestRv(cupd, "production", "new-checkout")));
      assert.match(await page.locator(tid("your-edits")).inputValue(), /^  rollout: 60$/m);
      assert.equal(await page.locator(tid("conflict")).count(), 0);

      // Taking the edits back and saving works now.
      await page.locator(tid("use-edits")).click();
      await eventually(async () => assert.equal(await page.locator(tid("field-spec.rollout")).inputValue(), "60"), { what: "the edits back" });
      await page.locator(tid("dry-run")).click();
      const text = await page.locator(`${tid("preview")} ${tid("diff-text")}`).innerText();
      assert.match(text, /^-  rollout: 70$/m);
      assert.match(text, /^\+  rollout: 60$/m);
      await page.locator(tid("save")).click();
      const commit = await writtenCommit(page);
      assert.equal((await newest(api, "production", "new-checkout")).commit, commit);
      assert.equal((await (await fetch(flagRest(cupd.baseUrl, "production", "new-checkout"))).json()).spec.rollout, 60);
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  test("history: entries, the diff between two revisions, revert", { timeout: 90_000 }, async () => {
    // Three revisions of a flag of its own, written through the API.
    const commits = [];
    for (const [rollout, msg] of [
      [10, "Start at 10"],
      [20, "Widen to 20"],
      [30, "Widen to 30"],
    ]) {
      const r = await api.resources.put({
        group: "flags.cup.dev",
        version: "v1alpha1",
        plural: "flags",
        namespace: "default",
        name: "history-demo",
        resource: { spec: { enabled: true, rollout } },
        message: msg,
      });
      commits.push(r.result.commit);
    }
    const page = await newPage(browser, cupd.baseUrl);
    try {
      await page.goto(`${flagPath("default", "history-demo")}?tab=history`);
      await page.locator(tid("history-row-2")).waitFor({ timeout: 30_000 });
      assert.equal(await page.locator(tid("tab-history")).getAttribute("aria-selected"), "true");
      const rows = await page.locator('[data-testid^="history-row-"]').evaluateAll((trs) => trs.map((tr) => [tr.dataset.commit, tr.innerText]));
      assert.deepEqual(
        rows.map(([c]) => c),
        [...commits].reverse(),
      );
      assert.match(rows[0][1], /Widen to 30/);
      assert.match(rows[2][1], /Start at 10/);
      assert.match(rows[2][1], /created/);
      assert.match(rows[0][1], /modified/);

      // The diff between the oldest and the newest.
      await page.locator(tid("history-select-0")).check();
      await page.locator(tid("history-select-2")).check();
      const diff = page.locator(tid("history-diff"));
      await diff.waitFor();
      const text = await diff.innerText();
      assert.match(text, /^-  rollout: 10$/m);
      assert.match(text, /^\+  rollout: 30$/m);
      await screenshot(page, "resource-history");

      // Revert to the oldest: the dry-run diff, then the write.
      await page.locator(tid("revert-2")).click();
      const rdiff = await page.locator(`${tid("revert-diff")} ${tid("diff-text")}`).innerText({ timeout: 15_000 });
      assert.match(rdiff, /^-  rollout: 30$/m);
      assert.match(rdiff, /^\+  rollout: 10$/m);
      assert.equal((await (await fetch(flagRest(cupd.baseUrl, "default", "history-demo"))).json()).spec.rollout, 30, "the dry run wrote nothing");
      await page.locator(tid("revert-confirm")).click();
      const commit = await writtenCommit(page.locator(tid("revert-box")));
      const now = await (await fetch(flagRest(cupd.baseUrl, "default", "history-demo"))).json();
      assert.deepEqual(now.spec, { enabled: true, rollout: 10 });
      const h = await newest(api, "default", "history-demo");
      assert.equal(h.commit, commit);
      assert.equal(h.subject, `Revert default/history-demo to ${commits[0].slice(0, 12)}`);
      // The history shows the revert on top.
      await eventually(async () => assert.equal(await page.locator(tid("history-row-0")).getAttribute("data-commit"), commit), { what: "the revert in the history" });
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  test("revert to a revision where the resource was deleted deletes it", { timeout: 60_000 }, async () => {
    const t = { group: "flags.cup.dev", version: "v1alpha1", plural: "flags", namespace: "staging", name: "phoenix" };
    await api.resources.put({ ...t, resource: { spec: { enabled: true } }, message: "Create phoenix" });
    const del = await api.resources.delete({ ...t, message: "Delete phoenix" });
    await api.resources.put({ ...t, resource: { spec: { enabled: false } }, message: "Phoenix again" });
    const page = await newPage(browser, cupd.baseUrl);
    try {
      await page.goto(`${flagPath("staging", "phoenix")}?tab=history`);
      await page.locator(tid("history-row-2")).waitFor({ timeout: 30_000 });
      assert.equal(await page.locator(tid("history-row-1")).getAttribute("data-commit"), del.result.commit);
      assert.match(await page.locator(tid("history-row-1")).innerText(), /deleted/);
      await page.locator(tid("revert-1")).click();
      const diff = await page.locator(`${tid("revert-diff")} ${tid("diff-text")}`).innerText({ timeout: 15_000 });
      assert.match(diff, /^-kind: Flag$/m, "the revert's dry run deletes the file");
      await page.locator(tid("revert-confirm")).click();
      const commit = await writtenCommit(page.locator(tid("revert-box")));
      assert.equal((await fetch(flagRest(cupd.baseUrl, "staging", "phoenix"))).status, 404);
      const h = await newest(api, "staging", "phoenix");
      assert.equal(h.commit, commit);
      assert.equal(h.subject, `Revert staging/phoenix to ${del.result.commit.slice(0, 12)}`);
      await page.locator(tid("not-found")).waitFor();
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  test("numbers round-trip exactly: beyond 2^53 and past a float64's digits", { timeout: 90_000 }, async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      // Through the form's number input: a flag variant's weight (an
      // integer without a maximum; a flag's file is YAML, which holds
      // integers up to 2^63).
      const weight = "9007199254740993"; // 2^53 + 1: a float64 rounds it to ...992
      await open(page, flagPath("staging", "new-checkout"));
      await page.locator(tid("add-spec.variants")).click();
      await page.locator(tid("field-spec.variants[0].key")).fill("big");
      await page.locator(tid("field-spec.variants[0].weight")).fill(weight);
      await yamlMatches(page, new RegExp(`^      weight: ${weight}$`, "m"));
      await page.locator(tid("dry-run")).click();
      assert.match(await page.locator(`${tid("preview")} ${tid("diff-text")}`).innerText(), new RegExp(`weight: ${weight}$`, "m"));
      await page.locator(tid("save")).click();
      await writtenCommit(page);
      const flagText = await (await fetch(flagRest(cupd.baseUrl, "staging", "new-checkout"))).text();
      assert.match(flagText, new RegExp(`"weight":\\s*${weight}\\b`), flagText);
      // Read back (spec_json now), the form shows the same digits.
      await open(page, flagPath("staging", "new-checkout"));
      assert.equal(await page.locator(tid("field-spec.variants[0].weight")).inputValue(), weight);

      // Through the YAML, on a new resource whose schema takes any value and
      // whose file is JSON: a ServiceConfig's data (?new=1 creates it).
      const big = "12345678901234567890";
      const dec = "0.1000000000000000055511151231257827";
      const rest = `${cupd.baseUrl}/apis/config.cup.dev/v1alpha1/namespaces/scratch/serviceconfigs/exact`;
      await open(page, "/ui/apis/config.cup.dev/v1alpha1/namespaces/scratch/serviceconfigs/exact?new=1");
      const text = `apiVersion: config.cup.dev/v1alpha1
kind: ServiceConfig
metadata:
  name: exact
  namespace: scratch
spec:
  data:
    big: ${big}
    dec: ${dec}
`;
      await page.locator(tid("yaml")).fill(text);
      await eventually(async () => assert.equal(await page.locator(tid("field-spec.data")).inputValue(), `big: ${big}\ndec: ${dec}\n`), {
        what: "the raw data in the form",
      });
      await page.locator(tid("dry-run")).click();
      const diff = await page.locator(`${tid("preview")} ${tid("diff-text")}`).innerText();
      assert.ok(diff.includes(`"big": ${big}`) && diff.includes(`"dec": ${dec}`), diff);
      await page.locator(tid("save")).click();
      await writtenCommit(page);
      const body = await (await fetch(rest)).text();
      assert.match(body, new RegExp(`"big":\\s*${big}\\b`), body);
      assert.ok(body.includes(dec), body);

      // Read back (cupd sends spec_json): the same digits, and a dry run changes nothing.
      await page.waitForURL((u) => !u.search.includes("new=1"));
      await open(page, "/ui/apis/config.cup.dev/v1alpha1/namespaces/scratch/serviceconfigs/exact");
      await yamlMatches(page, new RegExp(`^    big: ${big}$`, "m"));
      assert.ok((await yaml(page)).includes(`    dec: ${dec}\n`));
      await page.locator(tid("dry-run")).click();
      await page.locator(`${tid("preview")} [data-empty="true"]`).waitFor();
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  test("status: the reconcilers' conditions; the tabs work from the keyboard", { timeout: 60_000 }, async () => {
    const page = await newPage(browser, cupd.baseUrl, { colorScheme: "dark", viewport: { width: 1920, height: 1000 } });
    try {
      await open(page, "/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/bundles/default");
      // Arrow keys move between the tabs, and the URL keeps the tab.
      await page.locator(tid("tab-edit")).focus();
      await page.keyboard.press("ArrowRight");
      await page.waitForURL(/[?&]tab=status/);
      assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), "tab-status");
      assert.equal(await page.locator(tid("tab-status")).getAttribute("aria-selected"), "true");
      const rows = page.locator(`${tid("conditions")} tbody tr`);
      await rows.first().waitFor({ timeout: 15_000 });
      const texts = await rows.allInnerTexts();
      assert.ok(
        texts.some((t) => /flag-bundles/.test(t) && /Ready/.test(t) && /True/.test(t)),
        `a Ready condition of flag-bundles: ${texts}`,
      );
      await page.keyboard.press("ArrowRight");
      await page.waitForURL(/[?&]tab=history/);
      await page.locator(tid("history-row-0")).waitFor();
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  test("delete: a dry run first, then the confirmed delete", { timeout: 60_000 }, async () => {
    await putFlag(api.resources, "staging", "doomed", { enabled: false });
    const page = await newPage(browser, cupd.baseUrl, { viewport: { width: 320, height: 700 } });
    try {
      await open(page, flagPath("staging", "doomed"));
      await page.locator(tid("delete")).click();
      const diff = await page.locator(`${tid("preview")} ${tid("diff-text")}`).innerText();
      assert.match(diff, /^-kind: Flag$/m);
      assert.equal((await fetch(flagRest(cupd.baseUrl, "staging", "doomed"))).status, 200, "the dry run deleted nothing");
      await page.locator(tid("confirm-delete")).click();
      await page.locator(tid("not-found")).waitFor();
      await writtenCommit(page);
      assert.equal((await fetch(flagRest(cupd.baseUrl, "staging", "doomed"))).status, 404);
      // At 320 px nothing is wider than the viewport.
      const wide = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(wide <= 320, `the page is ${wide} px wide at 320`);
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });
});

/** The resourceVersion cupd reads now (the REST ETag). */
async function newestRv(cupd, ns, name) {
  return (await (await fetch(flagRest(cupd.baseUrl, ns, name))).json()).metadata.resourceVersion;
}

describe("in proposal mode (fake GitHub)", () => {
  let github;
  let cupd;
  before(async () => {
    github = await startFakeGitHub();
    cupd = await startCupd(github.cupdArgs);
    // cupd answers before it has read the repository: wait until it serves.
    await eventually(
      async () => {
        const res = await fetch(`${cupd.baseUrl}/ui/`);
        assert.equal(res.status, 200);
      },
      { timeoutMs: 60_000, what: "cupd to serve" },
    ).catch((err) => {
      throw new Error(`${err.message}\ncupd's stderr:\n${cupd.stderr()}`);
    });
  });
  after(async () => {
    await cupd?.stop();
    await github?.stop();
  });

  test("a save proposes: the proposal's link and number; a second edit is added to it", { timeout: 120_000 }, async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      await open(page, flagPath("default", "search-v2"));
      await page.locator(tid("field-spec.rollout")).fill("80");
      await page.locator(tid("dry-run")).click();
      await page.locator(tid("save")).click();
      const link = page.locator(`${tid("result")} ${tid("proposal-link")} a`);
      await link.waitFor({ timeout: 30_000 });
      const number = (await link.innerText()).replace("#", "");
      assert.match(number, /^[0-9]+$/);
      assert.match(await link.getAttribute("href"), /^https?:\/\//);
      assert.equal(await link.getAttribute("rel"), "noopener noreferrer");
      const branch = await page.locator(`${tid("result")} ${tid("branch")}`).innerText();
      const p = (await api().proposals.getProposal({ id: number })).proposal;
      assert.equal(p.branch, branch);

      // Reopened, the view lists the proposal and offers to add the next edit to it.
      await open(page, flagPath("default", "search-v2"));
      await page.locator(tid("meta-proposals")).waitFor({ timeout: 15_000 });
      const select = page.locator(tid("change-set"));
      await select.waitFor();
      await select.selectOption(branch);
      // The form holds the change set's version once it is read (the edit above, rollout 80).
      await page.locator(tid("on-branch")).waitFor();
      await eventually(async () => assert.equal(await page.locator(tid("field-spec.rollout")).inputValue(), "80"), { what: "the change set's version in the form" });
      await page.locator(tid("field-spec.description")).fill("Search backed by the new index, proposed.");
      await page.locator(tid("dry-run")).click();
      await page.locator(tid("save")).click();
      const link2 = page.locator(`${tid("result")} ${tid("proposal-link")} a`);
      await link2.waitFor({ timeout: 30_000 });
      assert.equal((await link2.innerText()).replace("#", ""), number, "the second edit went to the same proposal");
      const r = await api().resources.get({ group: "flags.cup.dev", version: "v1alpha1", plural: "flags", namespace: "default", name: "search-v2", revision: branch });
      assert.equal(r.resource.spec.rollout, 80);
      assert.equal(r.resource.spec.description, "Search backed by the new index, proposed.");
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  const api = () => clients(cupd.baseUrl);
});

describe("under a policy: the edit controls follow what cupd says the caller may do", () => {
  let policy;
  let cupd;
  before(async () => {
    policy = writePolicy(); // everyone signed in reads; "editor" also puts and deletes flags
    cupd = await startCupd(policy.args);
  });
  after(async () => {
    await cupd?.stop();
    policy?.cleanup();
  });

  /** A page signed in with token (kept in sessionStorage, as the sign-in view keeps it). */
  async function signedIn(token) {
    const page = await newPage(browser, cupd.baseUrl);
    await page.addInitScript((t) => sessionStorage.setItem("cup.token", t), token);
    return page;
  }

  test("a reader sees the resource and its history, and no way to change them", { timeout: 60_000 }, async () => {
    const page = await signedIn("token-reader");
    try {
      await open(page, `${flagPath("default", "dark-mode")}`);
      await page.locator(tid("access-note")).waitFor({ timeout: 15_000 });
      for (const id of ["dry-run", "save", "delete", "message", "labels-add", "add-spec.variants"]) {
        assert.equal(await page.locator(tid(id)).count(), 0, `no ${id} for a reader`);
      }
      assert.equal(await page.locator(tid("yaml")).getAttribute("readonly"), "");
      assert.ok(await page.locator(tid("field-spec.enabled")).isDisabled());
      assert.equal(await page.locator(tid("field-spec.description")).getAttribute("readonly"), "");
      await page.locator(tid("tab-history")).click();
      await page.locator(tid("history-row-0")).waitFor();
      assert.equal(await page.locator('[data-testid^="revert-"]').count(), 0, "no revert for a reader");
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  test("an editor of flags may save and delete flags, and nothing else", { timeout: 60_000 }, async () => {
    const page = await signedIn("token-editor");
    try {
      await open(page, flagPath("default", "dark-mode"));
      await page.locator(tid("dry-run")).waitFor({ timeout: 15_000 });
      await page.locator(tid("delete")).waitFor();
      assert.equal(await page.locator(tid("access-note")).count(), 0);
      // A bundle is not a flag: read only.
      await open(page, "/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/bundles/default");
      await page.locator(tid("access-note")).waitFor({ timeout: 15_000 });
      assert.equal(await page.locator(tid("dry-run")).count(), 0);
      assert.equal(await page.locator(tid("delete")).count(), 0);
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });
});
