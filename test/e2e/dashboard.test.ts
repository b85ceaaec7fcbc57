/**
 * The owner's dashboard in a real browser (Debian's Chromium, driven by playwright-core): live
 * over StatusService.Watch (no polling requests; a seat added later appears by itself), a
 * "stale since" banner and no "online" once the controller is gone, filters by seat,
 * conversation and state, paging past 50, a receipt's detail (proofs with ages, fence,
 * settlement), the owner's reconcile and settle behind a confirmation, charts, empty states, a
 * 390 px layout without sideways scrolling, text shown as text, a strict CSP, a refused token.
 * Screenshots: CLANKIE_SCREENSHOTS=docs writes them to docs/screenshots/.
 * Runs wherever Chromium is installed, and always in CI (.ci/run installs it).
 */
import { mkdirSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";
import { create } from "@bufbuild/protobuf";
import { AddSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { SeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { callReceipts, deliveryReceipts, fences } from "../../controller/db/schema.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { available, CHROMIUM } from "../kit/requirements.js";

// As the machine's probe found: without the background-networking flags Chromium's own calls are refused here.
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const SHOTS = process.env.CLANKIE_SCREENSHOTS === "docs" ? new URL("../../docs/screenshots/", import.meta.url).pathname : undefined;

describe.runIf(available("chromium"))("the owner's dashboard in Chromium", () => {
  let fleet: TestFleet;
  let browser: Browser;
  let deliveryId: string;
  let uncertainId: string;
  const open = async (width = 1280, height = 900): Promise<Page> => {
    const page = await browser.newPage({ viewport: { width, height } });
    await page.goto(`${fleet.controller.dashboardUrl}#token=${fleet.controller.ownerToken}`);
    await page.locator("#live", { hasText: "live" }).waitFor();
    return page;
  };
  const shot = async (page: Page, name: string) => {
    if (SHOTS) await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
  };

  beforeAll(async () => {
    if (SHOTS) mkdirSync(SHOTS, { recursive: true });
    fleet = await startFleet("pglite");
    const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.owner.addSeat(create(AddSeatRequestSchema, { name: "inbox", kind: SeatKind.MAILBOX, title: '<img src=x onerror="document.title=1">builds' }));
    const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    const res = await lead.call("message_seat", { seat: "inbox", message: "for the dashboard" });
    deliveryId = res.structuredContent!.deliveryId as string;
    await lead.close();
    // History for paging and filters: 60 older receipts of another conversation, and one uncertain original with its fence.
    const db = fleet.controller.database.db;
    const base = Date.now() - 20 * 60_000;
    await db.insert(deliveryReceipts).values(
      Array.from({ length: 60 }, (_, i) => ({
        id: randomUUID(),
        conversationId: "nightly",
        seatId: "testbox/inbox",
        contentFingerprint: `fp-${i}`,
        mode: "auto",
        state: i % 3 === 0 ? "not_sent" : "delivered",
        detail: `history ${i}`,
        createdAt: new Date(base + i * 10_000),
        settledAt: new Date(base + i * 10_000 + 5 + i),
      })),
    );
    uncertainId = randomUUID();
    await db.insert(deliveryReceipts).values({ id: uncertainId, conversationId: "global-default", seatId: "testbox/inbox", contentFingerprint: "fp-lost", mode: "auto", state: "uncertain", reason: "answer_lost", detail: "the answer was lost" });
    await db.insert(callReceipts).values({ id: uncertainId, tool: "message_seat", conversationId: "global-default", fingerprint: "call-lost", state: "uncertain", result: { schemaVersion: 1, outcome: "uncertain", detail: "the answer was lost" } });
    await db.insert(fences).values({ deliveryId: uncertainId, seatId: "testbox/inbox", contentFingerprint: "fp-lost", conversationId: "global-default" });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  });
  afterAll(async () => {
    await browser?.close();
    await fleet?.close();
  });

  it("is live over Watch: machines, seats and receipts without polling; a seat added later appears by itself", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const calls: string[] = [];
    page.on("request", (r) => calls.push(new URL(r.url()).pathname));
    const response = await page.goto(`${fleet.controller.dashboardUrl}#token=${fleet.controller.ownerToken}`);
    expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'");
    await page.locator("#seats tbody tr", { hasText: "testbox/inbox" }).waitFor();
    const seatRow = await page.locator("#seats tbody tr", { hasText: "testbox/inbox" }).innerText();
    expect(seatRow).toContain("mailbox");
    expect(seatRow).toContain("idle");
    expect(await page.locator("#machines tbody").innerText()).toContain("testbox");
    await page.locator("#receipts tbody tr", { hasText: deliveryId }).waitFor();
    expect(await page.locator("#receipts tbody tr", { hasText: deliveryId }).innerText()).toContain("delivered");
    expect(page.url()).not.toContain("token=");
    // The title arrived as text: shown literally, never parsed into an element that runs.
    expect(seatRow).toContain('<img src=x onerror="document.title=1">builds');
    expect(await page.locator("#seats img").count()).toBe(0);
    expect(await page.title()).toBe("Clankie Fleet");

    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).owner.addSeat(create(AddSeatRequestSchema, { name: "later", kind: SeatKind.MAILBOX }));
    await page.locator("#seats tbody tr", { hasText: "testbox/later" }).waitFor({ timeout: 15_000 });
    // One stream, no list polling: machines and seats only ever came from Watch.
    expect(calls.filter((p) => p.endsWith("/Watch"))).toHaveLength(1);
    expect(calls.filter((p) => p.endsWith("/ListSeats") || p.endsWith("/ListMachines"))).toEqual([]);
    // Charts drew bars from the receipts.
    expect(await page.locator("#chart-outcomes rect.bar").count()).toBeGreaterThan(0);
    expect(await page.locator("#chart-latency circle.dot").count()).toBeGreaterThan(0);
    await shot(page, "dashboard");
    await page.close();
  });

  it("pages past 50 and filters by seat, conversation and state", async () => {
    const page = await open();
    await page.locator("#page", { hasText: "1–50 of 62" }).waitFor();
    expect(await page.locator("#receipts tbody tr").count()).toBe(50);
    await page.click("#next");
    await page.locator("#page", { hasText: "51–62 of 62" }).waitFor();
    expect(await page.locator("#receipts tbody tr").count()).toBe(12);
    expect(await page.locator("#next").isDisabled()).toBe(true);
    await page.click("#prev");
    await page.locator("#page", { hasText: "1–50 of 62" }).waitFor();

    await page.fill("#f-conversation", "nightly");
    await page.press("#f-conversation", "Enter");
    await page.locator("#page", { hasText: "of 60" }).waitFor();
    await page.selectOption("#f-state", "not_sent");
    await page.locator("#page", { hasText: "1–20 of 20" }).waitFor();
    for (const row of await page.locator("#receipts tbody tr").allInnerTexts()) expect(row).toContain("not_sent");
    await page.selectOption("#f-seat", "testbox/later");
    await page.locator("#receipts-empty", { hasText: "No receipt matches these filters" }).waitFor();
    await page.click("#filters button[type=reset]");
    await page.locator("#page", { hasText: "1–50 of 62" }).waitFor();
    await page.close();
  });

  it("a receipt's detail shows its proofs with their ages, its fence and its settlement", async () => {
    const page = await open();
    await page.locator("#receipts button", { hasText: deliveryId }).click();
    await page.locator("#detail[open]").waitFor();
    expect(await page.locator("#d-title").innerText()).toContain(deliveryId);
    expect(await page.locator('#d-fields dd[data-field="state"]').innerText()).toBe("delivered");
    const proofs = await page.locator("#d-proofs tbody tr").allInnerTexts();
    expect(proofs.length).toBeGreaterThan(0);
    for (const p of proofs) expect(p).toMatch(/\d+ ms/);
    expect(await page.locator("#d-fence").innerText()).toMatch(/^No fence/);
    expect(await page.locator("#a-settle").isDisabled()).toBe(true);
    await page.close();
  });

  it("the owner reconciles and settles an uncertain receipt, each behind a confirmation; cancel changes nothing", async () => {
    const page = await open();
    await page.selectOption("#f-state", "uncertain");
    await page.locator("#receipts button", { hasText: uncertainId }).click();
    await page.locator("#detail[open]").waitFor();
    expect(await page.locator("#d-fence").innerText()).toMatch(/^Open for .*this exact text to testbox\/inbox is refused/);
    await page.click("#a-reconcile");
    expect(await page.locator("#confirm-text").innerText()).toContain("nothing is sent");
    await page.click("#confirm-yes");
    await page.locator("#d-result", { hasText: "Reconciled: uncertain" }).waitFor();

    await page.click("#a-settle");
    expect(await page.locator("#confirm-text").innerText()).toContain("cannot be undone");
    await shot(page, "dashboard-settle-confirm");
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

  it("at 390 px the page fits the screen: no sideways scrolling, tables scroll inside their boxes", async () => {
    const page = await open(390, 844);
    await page.locator("#seats tbody tr").first().waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    expect(await page.locator("#receipts th.wide").first().isHidden()).toBe(true);
    await shot(page, "dashboard-390px");
    await page.close();
  });

  it("a refused token shows the refusal, asks for the token, and shows no data", async () => {
    const page = await browser.newPage();
    await page.goto(`${fleet.controller.dashboardUrl}#token=owner_not-the-token`);
    await page.locator("#error", { hasText: "refused" }).waitFor();
    expect(await page.locator("#board").isHidden()).toBe(true);
    expect(await page.locator("#login").isVisible()).toBe(true);
    expect(await page.locator("#seats tbody tr").count()).toBe(0);
    await page.fill("#token", fleet.controller.ownerToken);
    await page.click("#login button");
    await page.locator("#seats tbody tr", { hasText: "testbox/inbox" }).waitFor();
    await page.close();
  });

  it("when the controller goes away: a 'stale since' banner, and nothing still claims to be online", async () => {
    const page = await open();
    await page.locator("#machines tbody tr", { hasText: "online" }).waitFor();
    await fleet.controller.close();
    await page.locator("#stale", { hasText: "Stale since" }).waitFor({ timeout: 30_000 });
    expect(await page.locator("#machines tbody").innerText()).not.toMatch(/\bonline\b/);
    expect(await page.locator("#machines tbody").innerText()).toContain("unknown (stale)");
    // The header under the banner no longer says "live".
    expect(await page.locator("#live").innerText()).toMatch(/^not live: last update \d/);
    expect(await page.locator("#seats tbody").innerText()).not.toContain("idle");
    await shot(page, "dashboard-stale");
    await page.close();
  });
});

describe.runIf(available("chromium"))("the dashboard's empty states", () => {
  it("with no seats and no receipts, says what to do next", async () => {
    const fleet = await startFleet("pglite");
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
    try {
      const page = await browser.newPage();
      await page.goto(`${fleet.controller.dashboardUrl}#token=${fleet.controller.ownerToken}`);
      await page.locator("#seats-empty", { hasText: "clankie seat add mailbox inbox" }).waitFor();
      expect(await page.locator("#receipts-empty").innerText()).toContain("message_seat");
      expect(await page.locator("#seats").isHidden()).toBe(true);
      expect(await page.locator("#chart-latency").textContent()).toContain("no settled delivery yet");
      if (SHOTS) await page.screenshot({ path: `${SHOTS}dashboard-empty.png`, fullPage: true });
    } finally {
      await browser.close();
      await fleet.close();
    }
  });
});
