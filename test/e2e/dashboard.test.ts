/**
 * The owner's dashboard in a real browser (Debian's Chromium, driven by playwright-core): live
 * over StatusService.Watch (no polling requests; a seat added later appears by itself), a
 * "stale since" banner and no "online" once the controller is gone, filters by seat,
 * conversation and state, paging past 50, a receipt's detail (proofs with ages, fence,
 * settlement), the owner's reconcile and settle behind a confirmation, a settle button that
 * looks disabled when it is (issue 37 item 6), charts, empty states, text shown as text, a
 * strict CSP, a refused token. The hires view, id search, chart ranges and the 390 px layout:
 * dashboard-views.test.ts. Screenshots (a realistic session, test/kit/dashboard-session.ts):
 * CLANKIE_SCREENSHOTS=docs writes them to docs/screenshots/; dashboard.png is the README's.
 * Runs wherever Chromium is installed, and always in CI (.ci/run installs it).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { AddSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { SeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { DASHBOARD_SCRIPTS } from "../../controller/http/dashboard.js";
import { startFleet } from "../kit/start-fleet.js";
import { ownerOf } from "../kit/owner.js";
import { available } from "../kit/requirements.js";
import { HISTORY, INBOX, launchChromium, MACHINE, REVIEWS, screenshot } from "../kit/dashboard-session.js";
import { startDashboardSession, type DashboardSession } from "../kit/dashboard-session.js";
import { readdirSync } from "node:fs";

describe.runIf(available("chromium"))("the owner's dashboard in Chromium", () => {
  let s: DashboardSession;

  beforeAll(async () => {
    s = await startDashboardSession();
  });
  afterAll(async () => {
    await s?.close();
  });

  it("is live over Watch: machines, seats and receipts without polling; a seat added later appears", async () => {
    const page = await s.browser.newPage({ viewport: { width: 1280, height: 900 } });
    const calls: string[] = [];
    page.on("request", (r) => calls.push(new URL(r.url()).pathname));
    const response = await page.goto(`${s.fleet.controller.dashboardUrl}#token=${s.fleet.controller.ownerToken}`);
    expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'");
    await page.locator("#seats tbody tr", { hasText: INBOX }).waitFor();
    const seatRow = await page.locator("#seats tbody tr", { hasText: INBOX }).innerText();
    expect(seatRow).toContain("mailbox");
    expect(seatRow).toContain("idle");
    expect(seatRow).toContain("Release notes for 0.4");
    // Issue 35 item 1: "accepts" is exactly list_seats's deliveryModes; a mailbox reports none.
    expect(seatRow.split("\t")[3]).toBe("none");
    expect(await page.locator("#machines tbody").innerText()).toContain(MACHINE);
    await page.locator("#receipts tbody tr", { hasText: s.deliveryId }).waitFor();
    expect(await page.locator("#receipts tbody tr", { hasText: s.deliveryId }).innerText()).toContain("delivered");
    expect(page.url()).not.toContain("token=");

    const { owner } = ownerOf(s.fleet.controller.url, s.fleet.controller.ownerToken);
    const standup = { name: "standup", kind: SeatKind.MAILBOX, title: "Daily standup notes" };
    await owner.addSeat(create(AddSeatRequestSchema, standup));
    await page.locator("#seats tbody tr", { hasText: `${MACHINE}/standup` }).waitFor({ timeout: 15_000 });
    // One stream, no list polling: machines, seats and hires only ever came from Watch.
    expect(calls.filter((p) => p.endsWith("/Watch"))).toHaveLength(1);
    expect(calls.filter((p) => /\/(ListSeats|ListMachines|ListHires)$/.test(p))).toEqual([]);
    // Every script module the page loaded is one the server lists, and every module on disk is served.
    const modules = calls.filter((p) => p.endsWith(".js")).map((p) => p.split("/").pop());
    expect([...new Set(modules)].sort()).toEqual([...DASHBOARD_SCRIPTS].sort());
    const folder = new URL("../../controller/dashboard/", import.meta.url);
    const onDisk = readdirSync(folder).filter((f) => f.endsWith(".js"));
    expect(onDisk.sort()).toEqual([...DASHBOARD_SCRIPTS].sort());
    // Charts drew bars and latency from the journal's timeline.
    expect(await page.locator("#chart-outcomes rect.bar").count()).toBeGreaterThan(0);
    expect(await page.locator("#chart-latency circle.dot").count()).toBeGreaterThan(0);
    await page.locator("#hires tbody tr").nth(1).waitFor();
    await s.shot(page, "dashboard");
    await page.close();
  });

  it("pages past 50 and filters by seat, conversation and state", async () => {
    const page = await s.open();
    await page.locator("#page", { hasText: "1–50 of 62" }).waitFor();
    expect(await page.locator("#receipts tbody tr").count()).toBe(50);
    await page.click("#next");
    await page.locator("#page", { hasText: "51–62 of 62" }).waitFor();
    expect(await page.locator("#receipts tbody tr").count()).toBe(12);
    expect(await page.locator("#next").isDisabled()).toBe(true);
    await page.click("#prev");
    await page.locator("#page", { hasText: "1–50 of 62" }).waitFor();

    await page.fill("#f-conversation", HISTORY.conversation);
    await page.press("#f-conversation", "Enter");
    await page.locator("#page", { hasText: `of ${HISTORY.total}` }).waitFor();
    await page.selectOption("#f-state", "not_sent");
    await page.locator("#page", { hasText: `1–${HISTORY.notSent} of ${HISTORY.notSent}` }).waitFor();
    for (const row of await page.locator("#receipts tbody tr").allInnerTexts()) expect(row).toContain("not_sent");
    await page.selectOption("#f-seat", REVIEWS);
    await page.locator("#page", { hasText: "of 10" }).waitFor();
    await page.selectOption("#f-seat", `${MACHINE}/standup`);
    await page.locator("#receipts-empty", { hasText: "No receipt matches these filters" }).waitFor();
    await page.click("#filters button[type=reset]");
    await page.locator("#page", { hasText: "1–50 of 62" }).waitFor();
    await page.close();
  });

  it("a receipt's detail: proofs, fence, settlement; a disabled settle looks disabled (issue 37 item 6)", async () => {
    const page = await s.open();
    await page.locator("#receipts button", { hasText: s.deliveryId }).click();
    await page.locator("#detail[open]").waitFor();
    expect(await page.locator("#d-title").innerText()).toContain(s.deliveryId);
    expect(await page.locator('#d-fields dd[data-field="state"]').innerText()).toBe("delivered");
    const proofs = await page.locator("#d-proofs tbody tr").allInnerTexts();
    expect(proofs.length).toBeGreaterThan(0);
    for (const p of proofs) expect(p).toMatch(/\d+ ms/);
    expect(await page.locator("#d-fence").innerText()).toMatch(/^No fence/);
    expect(await page.locator("#a-settle").isDisabled()).toBe(true);
    // Disabled looks it: grey and flat with a not-allowed cursor, not the red of a live settle, and says why.
    const look = await page.locator("#a-settle").evaluate((b) => {
      const c = getComputedStyle(b);
      return { background: c.backgroundColor, color: c.color, cursor: c.cursor };
    });
    expect(look).toEqual({ background: "rgb(243, 244, 246)", color: "rgb(107, 114, 128)", cursor: "not-allowed" });
    expect(await page.locator("#a-why").innerText()).toBe("Nothing to reconcile or settle: this receipt is delivered.");
    await s.shot(page, "dashboard-settle-disabled");
    await page.close();
  });

  it("the owner reconciles and settles an uncertain receipt, each confirmed; cancel changes nothing", async () => {
    const page = await s.open();
    await page.selectOption("#f-state", "uncertain");
    await page.locator("#receipts button", { hasText: s.uncertainId }).click();
    await page.locator("#detail[open]").waitFor();
    const fence = await page.locator("#d-fence").innerText();
    expect(fence).toMatch(new RegExp(`^Open for .*this exact text to ${INBOX} is refused`));
    // Enabled, it is the red of an action that runs, and nothing says it cannot.
    const red = await page.locator("#a-settle").evaluate((b) => getComputedStyle(b).backgroundColor);
    expect(red).toBe("rgb(185, 28, 28)");
    expect(await page.locator("#a-why").innerText()).toBe("");
    await page.click("#a-reconcile");
    expect(await page.locator("#confirm-text").innerText()).toContain("nothing is sent");
    await page.click("#confirm-yes");
    await page.locator("#d-result", { hasText: "Reconciled: uncertain" }).waitFor();

    await page.click("#a-settle");
    expect(await page.locator("#confirm-text").innerText()).toContain("cannot be undone");
    await s.shot(page, "dashboard-settle-confirm");
    await page.click("#confirm-no");
    await page.locator("#d-result", { hasText: "Cancelled" }).waitFor();
    expect(await page.locator('#d-fields dd[data-field="state"]').innerText()).toBe("uncertain");

    await page.click("#a-settle");
    await page.click("#confirm-yes");
    await page.locator("#d-result", { hasText: "Settled: abandoned-unknown" }).waitFor();
    await page.locator('#d-fields dd[data-field="state"]', { hasText: "abandoned-unknown" }).waitFor();
    expect(await page.locator("#d-settlement").innerText()).toMatch(/^abandoned-unknown by owner/);
    expect(await page.locator("#d-fence").innerText()).toMatch(/^Resolved as abandoned-unknown/);
    await page.close();
  });

  it("a refused token shows the refusal, asks for the token, and shows no data", async () => {
    const page = await s.browser.newPage();
    await page.goto(`${s.fleet.controller.dashboardUrl}#token=owner_not-the-token`);
    await page.locator("#error", { hasText: "refused" }).waitFor();
    expect(await page.locator("#board").isHidden()).toBe(true);
    expect(await page.locator("#login").isVisible()).toBe(true);
    expect(await page.locator("#seats tbody tr").count()).toBe(0);
    await page.fill("#token", s.fleet.controller.ownerToken);
    await page.click("#login button");
    await page.locator("#seats tbody tr", { hasText: INBOX }).waitFor();
    await page.close();
  });

  it("when the controller goes away: a 'stale since' banner, and nothing still claims to be online", async () => {
    const page = await s.open();
    await page.locator("#machines tbody tr", { hasText: "online" }).waitFor();
    await s.fleet.controller.close();
    await page.locator("#stale", { hasText: "Stale since" }).waitFor({ timeout: 30_000 });
    expect(await page.locator("#machines tbody").innerText()).not.toMatch(/\bonline\b/);
    expect(await page.locator("#machines tbody").innerText()).toContain("unknown (stale)");
    // The header under the banner no longer says "live".
    expect(await page.locator("#live").innerText()).toMatch(/^not live: last update \d/);
    expect(await page.locator("#seats tbody").innerText()).not.toContain("idle");
    await s.shot(page, "dashboard-stale");
    await page.close();
  });
});

describe.runIf(available("chromium"))("the dashboard shows what seats and receipts carry as text", () => {
  it("a seat title with markup is shown literally and never runs (no screenshot: a test, not a session)", async () => {
    const fleet = await startFleet("pglite");
    const browser = await launchChromium();
    try {
      const title = '<img src=x onerror="document.title=1">builds';
      const { owner } = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
      await owner.addSeat(create(AddSeatRequestSchema, { name: "inbox", kind: SeatKind.MAILBOX, title }));
      const page = await browser.newPage();
      await page.goto(`${fleet.controller.dashboardUrl}#token=${fleet.controller.ownerToken}`);
      await page.locator("#seats tbody tr", { hasText: "testbox/inbox" }).waitFor();
      expect(await page.locator("#seats tbody tr", { hasText: "testbox/inbox" }).innerText()).toContain(title);
      expect(await page.locator("img").count()).toBe(0);
      expect(await page.title()).toBe("Clankie Fleet");
    } finally {
      await browser.close();
      await fleet.close();
    }
  });
});

describe.runIf(available("chromium"))("the dashboard's empty states", () => {
  it("with no seats, no hires and no receipts, says what to do next", async () => {
    const fleet = await startFleet("pglite");
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(`${fleet.controller.dashboardUrl}#token=${fleet.controller.ownerToken}`);
      await page.locator("#seats-empty", { hasText: "clankie seat add mailbox inbox" }).waitFor();
      expect(await page.locator("#receipts-empty").innerText()).toContain("message_seat");
      expect(await page.locator("#hires-empty").innerText()).toContain("hire_agent");
      expect(await page.locator("#seats").isHidden()).toBe(true);
      expect(await page.locator("#hires").isHidden()).toBe(true);
      await page.locator("#chart-latency .chart-empty").waitFor();
      expect(await page.locator("#chart-latency").textContent()).toContain("no settled delivery in the last 1 h");
      await screenshot(page, "dashboard-empty");
    } finally {
      await browser.close();
      await fleet.close();
    }
  });
});
