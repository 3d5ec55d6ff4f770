// Sign-in against a cupd with --policy (tokens: uiutil.writePolicy):
// anonymous visitors are sent to sign in and back; a token cupd refuses is
// forgotten and said so; a read-only token sees the lists but no "New"; an
// editor's token sees it; `next` never leaves the app.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { expectClean, launchBrowser, newPage, startCupd } from "./harness.js";
import { writePolicy } from "./uiutil.js";

const flagsDefault = "/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags";

describe("sign-in under a policy", () => {
  let policy;
  let cupd;
  let browser;
  before(async () => {
    policy = writePolicy();
    [cupd, browser] = await Promise.all([startCupd(policy.args), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await cupd?.stop();
    policy?.cleanup();
  });

  async function signIn(page, token) {
    const input = page.locator('[data-testid="token-input"]');
    await input.waitFor({ timeout: 15_000 });
    assert.equal(await input.getAttribute("type"), "password");
    assert.equal(await input.getAttribute("autocomplete"), "off");
    await input.fill(token);
    await page.locator('[data-testid="signin"]').click();
  }

  it("sends anonymous visitors to sign in, then back; a read-only token sees no New", async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      await page.goto(`${cupd.baseUrl}${flagsDefault}?labelSelector=team%3Dweb`);
      await page.waitForURL(/\/ui\/signin\?next=/, { timeout: 15_000 });
      assert.equal(new URL(page.url()).searchParams.get("next"), `${flagsDefault}?labelSelector=team%3Dweb`);

      // A token cupd does not know: said, and forgotten.
      await signIn(page, "not-a-token");
      const error = page.locator('[data-testid="signin-error"]');
      await error.waitFor({ timeout: 15_000 });
      assert.match(await error.innerText(), /cupd does not accept this token \(Unauthenticated: /);
      assert.equal(await page.evaluate(() => sessionStorage.getItem("cup.token")), null);
      assert.match(page.url(), /\/ui\/signin\?next=/);

      await signIn(page, "token-reader");
      await page.waitForURL(`**${flagsDefault}?labelSelector=team%3Dweb`, { timeout: 15_000 });
      await page.locator('[data-testid="row-dark-mode"]').waitFor({ timeout: 15_000 });
      assert.equal(await page.locator('[data-testid="user"]').innerText(), "reader");
      // cupd says the reader may not put: no New.
      await page.locator('[data-testid="list-toolbar"][data-access="no-put"]').waitFor({ timeout: 15_000 });
      assert.equal(await page.locator('[data-testid="new"]').count(), 0);
      // The token is kept for the tab, never in the URL.
      assert.equal(await page.evaluate(() => sessionStorage.getItem("cup.token")), "token-reader");
      assert.doesNotMatch(page.url(), /token-reader/);
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("shows New to a user cupd lets write", async () => {
    const page = await newPage(browser, cupd.baseUrl);
    try {
      await page.goto(`${cupd.baseUrl}/ui/signin?next=${encodeURIComponent(flagsDefault)}`);
      await signIn(page, "token-editor");
      await page.waitForURL(`**${flagsDefault}`, { timeout: 15_000 });
      await page.locator('[data-testid="list-toolbar"][data-access="put"]').waitFor({ timeout: 15_000 });
      await page.locator('[data-testid="new"]').waitFor({ timeout: 5_000 });
      assert.equal(await page.locator('[data-testid="user"]').innerText(), "editor");

      // Signing out forgets the token; the next read needs signing in again.
      await page.locator("header button", { hasText: "Sign out" }).click();
      assert.equal(await page.evaluate(() => sessionStorage.getItem("cup.token")), null);
      await page.waitForURL(/\/ui\/signin\?next=/, { timeout: 15_000 });
      expectClean(page);
    } finally {
      await page.context().close();
    }
  });

  it("never sends anyone off the app after signing in", async () => {
    for (const next of ["https://evil.example/", "//evil.example/ui/", "/ui/\\\\evil.example", "javascript:alert(1)", "/elsewhere", "/ui/signin"]) {
      const page = await newPage(browser, cupd.baseUrl);
      try {
        await page.goto(`${cupd.baseUrl}/ui/signin?next=${encodeURIComponent(next)}`);
        await signIn(page, "token-reader");
        await page.waitForURL(`${cupd.baseUrl}/ui/`, { timeout: 15_000 });
        await page.locator('[data-testid="types"]').waitFor({ timeout: 15_000 });
        expectClean(page);
      } finally {
        await page.context().close();
      }
    }
  });
});
