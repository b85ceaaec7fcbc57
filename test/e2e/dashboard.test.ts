/**
 * The owner's dashboard in a real browser (Debian's Chromium, driven by playwright-core): the
 * page opened with the owner token in its fragment shows the machine, the seat and a settled
 * receipt from the controller's StatusService; a refused token shows the refusal and no data;
 * text a seat carries is shown as text, never run as HTML; the page sends a strict CSP.
 * Runs wherever Chromium is installed, and always in CI (.ci/run installs it).
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser } from "playwright-core";
import { create } from "@bufbuild/protobuf";
import { AddSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { SeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";

const CHROMIUM = "/usr/bin/chromium";
// As the machine's probe found: without the background-networking flags Chromium's own calls are refused here.
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

describe.runIf(existsSync(CHROMIUM) || process.env.CI)("the owner's dashboard in Chromium", () => {
  let fleet: TestFleet;
  let browser: Browser;
  let deliveryId: string;

  beforeAll(async () => {
    fleet = await startFleet("pglite");
    const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.owner.addSeat(create(AddSeatRequestSchema, { name: "inbox", kind: SeatKind.MAILBOX, title: '<img src=x onerror="document.title=1">builds' }));
    const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    const res = await lead.call("message_seat", { seat: "inbox", message: "for the dashboard" });
    deliveryId = res.structuredContent!.deliveryId as string;
    await lead.close();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  });
  afterAll(async () => {
    await browser?.close();
    await fleet?.close();
  });

  it("shows the machine, the seat with its status and capabilities, and the settled receipt", async () => {
    const page = await browser.newPage();
    const response = await page.goto(`${fleet.controller.dashboardUrl}#token=${fleet.controller.ownerToken}`);
    expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'");
    await page.locator("#seats tbody tr", { hasText: "testbox/inbox" }).waitFor();
    const seatRow = await page.locator("#seats tbody tr", { hasText: "testbox/inbox" }).innerText();
    expect(seatRow).toContain("mailbox");
    expect(seatRow).toContain("idle");
    expect(await page.locator("#machines tbody").innerText()).toContain("testbox");
    await page.locator("#receipts tbody tr", { hasText: deliveryId }).waitFor();
    expect(await page.locator("#receipts tbody tr", { hasText: deliveryId }).innerText()).toContain("delivered");
    // The token left the address bar once read.
    expect(page.url()).not.toContain("token=");
    // The title arrived as text: shown literally, never parsed into an element that runs.
    expect(seatRow).toContain('<img src=x onerror="document.title=1">builds');
    expect(await page.locator("#seats img").count()).toBe(0);
    expect(await page.title()).toBe("Clankie Fleet");
    await page.close();
  });

  it("a refused token shows the refusal, asks for the token, and shows no data", async () => {
    const page = await browser.newPage();
    await page.goto(`${fleet.controller.dashboardUrl}#token=owner_not-the-token`);
    await page.locator("#error", { hasText: "refused" }).waitFor();
    expect(await page.locator("#board").isHidden()).toBe(true);
    expect(await page.locator("#login").isVisible()).toBe(true);
    expect(await page.locator("#seats tbody tr").count()).toBe(0);
    // Pasting the right token opens the board.
    await page.fill("#token", fleet.controller.ownerToken);
    await page.click("#login button");
    await page.locator("#seats tbody tr", { hasText: "testbox/inbox" }).waitFor();
    await page.close();
  });
});
