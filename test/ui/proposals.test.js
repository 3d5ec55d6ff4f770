// The proposals view: against a cupd without an SCM (it says so plainly),
// and against a cupd in proposal mode on a fake GitHub
// (internal/cmd/fakegithub): a write through the API opens a pull request,
// which the UI lists with its resources and its link, filters by state, and
// shows on its own page.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { expectClean, launchBrowser, newPage, screenshot, startCupd } from "./harness.js";
import { clients, putFlag } from "./apiclient.js";
import { eventually, startFakeGitHub } from "./uiutil.js";

describe("proposals view", () => {
  let browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  describe("without an SCM", () => {
    let cupd;
    before(async () => {
      cupd = await startCupd([]);
    });
    after(async () => {
      await cupd?.stop();
    });

    it("says that writes are commits, not proposals", async () => {
      const page = await newPage(browser, cupd.baseUrl);
      try {
        await page.goto(`${cupd.baseUrl}/ui/proposals`);
        const note = page.locator('[data-testid="no-scm"]');
        await note.waitFor({ timeout: 15_000 });
        assert.equal(await note.innerText(), "cupd runs without an SCM: writes are commits, not proposals.");
        assert.equal(await page.locator(".error").count(), 0, "no error box besides the note");
        await page.goto(`${cupd.baseUrl}/ui/proposals/3`);
        await note.waitFor({ timeout: 15_000 });
        expectClean(page);
      } finally {
        await page.context().close();
      }
    });
  });

  describe("with GitHub (a fake)", () => {
    let github;
    let cupd;
    let api;
    before(async () => {
      github = await startFakeGitHub();
      cupd = await startCupd(github.cupdArgs);
      api = clients(cupd.baseUrl);
    });
    after(async () => {
      await cupd?.stop();
      await github?.stop();
    });

    it("lists the proposal a write opened, with its resources and link, by state", async () => {
      const put = await putFlag(api.resources, "default", "dark-mode", { enabled: true, rollout: 25 }, { team: "web" });
      const proposal = put.result?.proposal;
      assert.ok(proposal?.id, "the write opened a proposal");
      const second = await putFlag(api.resources, "staging", "new-checkout", { enabled: false }, { team: "payments" });
      assert.ok(second.result?.proposal?.id);
      assert.notEqual(second.result.proposal.id, proposal.id);

      // The reconciler adds the flag's bundle to the same proposal after the
      // write returns: wait for it, so the page shows both resources.
      await eventually(
        async () => {
          const r = await api.proposals.getProposal({ id: proposal.id });
          assert.equal(r.proposal.resources.length, 2);
        },
        { what: "the reconciler's bundle to join the proposal" },
      );
      const page = await newPage(browser, cupd.baseUrl);
      try {
        await page.goto(`${cupd.baseUrl}/ui/proposals`);
        const row = page.locator(`[data-testid="proposal-${proposal.id}"]`);
        await row.waitFor({ timeout: 15_000 });
        // Newest first.
        const ids = await page.locator('[data-testid="proposals"] tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.testid));
        assert.deepEqual(ids, [`proposal-${second.result.proposal.id}`, `proposal-${proposal.id}`]);
        assert.equal(await page.locator('[data-testid="state-select"]').inputValue(), "open");

        assert.equal(await row.locator('[data-testid="title"]').innerText(), "Put Flag default/dark-mode");
        assert.equal(await row.locator('[data-testid="state"]').innerText(), "open");
        const text = await row.innerText();
        assert.ok(text.includes(`${proposal.branch} → main`), `branch → base in ${text}`);
        assert.match(text, /\bgithub\b/);
        // Created and updated as times.
        assert.equal(await row.locator("time").count(), 2);
        // The resources it changes (the flag, and the bundle the reconciler
        // derives from it), linked to their views.
        const res = row.locator("ul.proposal-resources a");
        assert.deepEqual(await res.allInnerTexts(), ["Flag default/dark-mode", "FlagBundle default/default"]);
        assert.equal(await res.first().getAttribute("href"), "/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/dark-mode");
        assert.equal(await res.nth(1).getAttribute("href"), "/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flagbundles/default");
        // The pull request's page, opened in a new tab without an opener.
        const link = row.locator('[data-testid="link"] a');
        assert.equal(await link.getAttribute("href"), proposal.url);
        assert.match(proposal.url, new RegExp(`^http://127\\.0\\.0\\.1:\\d+/acme/config/pull/${proposal.id}$`));
        assert.equal(await link.getAttribute("target"), "_blank");
        assert.equal(await link.getAttribute("rel"), "noopener noreferrer");
        await screenshot(page, "proposals");

        // Merged on GitHub: cupd reads the state again (--proposals-refresh 1s).
        await github.review(proposal.id, "merge");
        await eventually(
          async () => {
            const r = await api.proposals.getProposal({ id: proposal.id });
            assert.equal(r.proposal.state, 2 /* MERGED */);
          },
          { what: "cupd to see the merge" },
        );
        await page.locator('[data-testid="state-select"]').selectOption("merged");
        await page.waitForURL(/state=merged/, { timeout: 10_000 });
        // The open list's rows are not shown under "merged" while it loads.
        await page.locator('[data-testid="count"]').getByText("1 merged proposal.").waitFor({ timeout: 15_000 });
        assert.equal(await row.locator('[data-testid="state"]').innerText(), "merged");
        assert.equal(await page.locator('[data-testid="proposals"] tbody tr').count(), 1);

        await page.locator('[data-testid="state-select"]').selectOption("open");
        await page.locator(`[data-testid="proposal-${second.result.proposal.id}"]`).waitFor({ timeout: 15_000 });
        assert.equal(await row.count(), 0, "the merged one is not open");

        await page.locator('[data-testid="state-select"]').selectOption("closed");
        await page.locator('[data-testid="count"]').getByText("No closed proposals.").waitFor({ timeout: 15_000 });

        await page.locator('[data-testid="state-select"]').selectOption("all");
        await row.waitFor({ timeout: 15_000 });
        assert.equal(await page.locator('[data-testid="proposals"] tbody tr').count(), 2);
        expectClean(page);
      } finally {
        await page.context().close();
      }
    });

    it("shows one proposal on its own page", async () => {
      const list = await api.proposals.listProposals({});
      const p = list.proposals.at(-1);
      const page = await newPage(browser, cupd.baseUrl);
      try {
        await page.goto(`${cupd.baseUrl}/ui/proposals?state=all`);
        await page.locator(`[data-testid="proposal-${p.id}"] th a`).click();
        await page.waitForURL(`**/ui/proposals/${p.id}`, { timeout: 10_000 });
        const detail = page.locator(`section[data-testid="proposal-${p.id}"]`);
        await detail.waitFor({ timeout: 15_000 });
        assert.equal(await detail.locator('[data-testid="title"]').innerText(), p.title);
        assert.equal(await detail.locator('[data-testid="link"] a').getAttribute("href"), p.url);
        assert.match(await detail.innerText(), new RegExp(`${p.branch} → main`));

        // One cup did not open.
        await page.goto(`${cupd.baseUrl}/ui/proposals/999`);
        const error = page.locator(".error");
        await error.waitFor({ timeout: 15_000 });
        assert.match(await error.innerText(), /NotFound/);
        expectClean(page);
      } finally {
        await page.context().close();
      }
    });
  });
});
