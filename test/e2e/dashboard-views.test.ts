/**
 * Issue 37 items 3 and 6 in Chromium, on a realistic session (test/kit/dashboard-session.ts):
 * the hires view (state, harness, seat, pane, brief, readiness evidence; a hire's proofs and
 * fix), search by receipt id, the charts' time range with labelled axes, and at 390 px wide a
 * page that neither scrolls sideways nor breaks a word in the middle. Screenshots with
 * CLANKIE_SCREENSHOTS=docs: dashboard-hires.png, dashboard-24h.png, dashboard-390px.png,
 * dashboard-390px-detail.png.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { available } from "../kit/requirements.js";
import { machineCerts, machines } from "../../controller/db/schema.js";
import { HISTORY, midWordBreaks, startDashboardSession, type DashboardSession } from "../kit/dashboard-session.js";

describe.runIf(available("chromium"))("the dashboard's hires, id search, chart range and narrow layout", () => {
  let s: DashboardSession;

  beforeAll(async () => {
    s = await startDashboardSession();
  });
  afterAll(async () => {
    await s?.close();
  });

  it("item 3: the hires view shows state, harness, seat, pane, brief, readiness; a hire opens its proofs", async () => {
    const page = await s.open();
    const hireRow = (id: string) =>
      page.locator("#hires tbody tr", { has: page.locator(`button[aria-label="hire ${id}"]`) });
    const spawned = hireRow(s.spawnedHireId);
    await spawned.waitFor();
    const row = await spawned.innerText();
    for (const text of ["spawned", "claude", "devbox/release-writer", "%3", "started", "3 of 3 proven", "ago"]) {
      expect(row).toContain(text);
    }
    const failed = await hireRow(s.failedHireId).innerText();
    for (const text of ["failed", "codex", "none"]) expect(failed).toContain(text);
    // Newest first: the spawned hire (12 min ago) above the failed one (40 min ago).
    expect(await page.locator("#hires tbody tr").first().innerText()).toContain("spawned");

    await spawned.locator("button").click();
    await page.locator("#hire-detail[open]").waitFor();
    expect(await page.locator("#h-title").innerText()).toBe(`Hire ${s.spawnedHireId}`);
    const proofs = await page.locator("#h-proofs tbody tr").allInnerTexts();
    expect(proofs.map((p) => p.split("\t").slice(0, 3))).toEqual([
      ["pane_alive", "proven", "14 ms"],
      ["channel_listening", "proven", "31 ms"],
      ["session_file", "proven", "46 ms"],
    ]);
    expect(await page.locator('#h-fields dd[data-field="pane"]').innerText()).toBe("%3");
    await s.shot(page, "dashboard-hires");
    await page.keyboard.press("Escape");

    await page.locator(`button[aria-label="hire ${s.failedHireId}"]`).click();
    await page.locator("#hire-detail[open]").waitFor();
    expect(await page.locator('#h-fields dd[data-field="reason"]').innerText()).toBe("harness_unavailable");
    const fix = await page.locator('#h-fields dd[data-field="what to do"]').innerText();
    expect(fix).toContain("install codex on devbox");
    expect(await page.locator("#h-proofs-empty").isVisible()).toBe(true);
    await page.close();
  });

  it("item 6: search by id: an id's start lists its receipt, the whole id opens it, too short is flagged", async () => {
    const page = await s.open();
    await page.locator("#page", { hasText: "of 62" }).waitFor();
    await page.fill("#f-id", s.uncertainId.slice(0, 8).toUpperCase());
    await page.press("#f-id", "Enter");
    await page.locator("#page", { hasText: "1–1 of 1" }).waitFor();
    expect(await page.locator("#receipts tbody").innerText()).toContain(s.uncertainId);

    await page.fill("#f-id", s.deliveryId);
    await page.press("#f-id", "Enter");
    await page.locator("#detail[open]").waitFor();
    expect(await page.locator("#d-title").innerText()).toBe(`Receipt ${s.deliveryId}`);
    await page.keyboard.press("Escape");

    await page.fill("#f-id", "0000ffff");
    await page.press("#f-id", "Enter");
    await page.locator("#receipts-empty", { hasText: "No receipt's id begins with 0000ffff" }).waitFor();
    await page.fill("#f-id", "ab");
    await page.press("#f-id", "Enter");
    await page.locator("#page", { hasText: "of 62" }).waitFor();
    const validation = await page.locator("#f-id").evaluate((i: HTMLInputElement) => i.validationMessage);
    expect(validation).toContain("at least 4 characters");
    await page.close();
  });

  it("item 6: the charts take a time range (15 min to 24 h) and label both axes", async () => {
    const page = await s.open();
    const ticks = () => page.locator("#chart-outcomes text.tick-x").allTextContents();
    await page.locator("#chart-outcomes rect.bar").first().waitFor();
    expect(await ticks()).toEqual(["60", "45", "30", "15", "now"]);
    expect(await page.locator("#chart-outcomes text.axis-x").textContent()).toBe("minutes ago");
    expect(await page.locator("#chart-outcomes text.axis-y").textContent()).toBe("receipts per 2 min");
    expect(await page.locator("#chart-latency text.axis-y").textContent()).toBe("latency, ms (log)");
    // History settles in 8 to 147 ms: the log axis runs to the next power of ten.
    expect(await page.locator("#chart-latency text.tick-y").allTextContents()).toEqual(["1", "10", "100", "1k"]);
    const barTitles = async () =>
      (await page.locator("#chart-outcomes rect.bar title").allTextContents()).map((t) => Number(t.split(" ")[0]));
    const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    // An hour holds every receipt: the 60 of history, the delivery made now and the uncertain one.
    expect(total(await barTitles())).toBe(HISTORY.total + 2);

    await page.selectOption("#range", "15m");
    await page.waitForFunction(() => document.querySelector("#chart-outcomes text.tick-x")?.textContent === "15");
    expect(await ticks()).toEqual(["15", "10", "5", "now"]);
    expect(await page.locator("#chart-outcomes text.axis-y").textContent()).toBe("receipts per 1 min");
    // The last 15 minutes hold only the newest of the history (one each 50 s) and the two of now.
    const quarter = total(await barTitles());
    expect(quarter).toBeGreaterThan(2);
    expect(quarter).toBeLessThan(HISTORY.total);

    await page.selectOption("#range", "24h");
    await page.waitForFunction(
      () => document.querySelector("#chart-outcomes text.axis-x")?.textContent === "hours ago",
    );
    expect(await ticks()).toEqual(["24", "18", "12", "6", "now"]);
    expect(await page.locator("#chart-outcomes text.axis-y").textContent()).toBe("receipts per 30 min");
    expect(total(await barTitles())).toBe(HISTORY.total + 2);
    await s.shot(page, "dashboard-24h");
    await page.close();
  });

  it("item 6: at 390 px nothing scrolls sideways and no word breaks mid-word, on the page or in a detail", async () => {
    const page = await s.open(390, 844);
    await page.locator("#hires tbody tr").first().waitFor();
    await page.locator("#chart-outcomes rect.bar").first().waitFor();
    const overflow = await page.evaluate(() => {
      const root = document.documentElement;
      return root.scrollWidth - root.clientWidth;
    });
    expect(overflow).toBeLessThanOrEqual(0);
    expect(await page.locator("#receipts th.wide").first().isHidden()).toBe(true);
    expect(await midWordBreaks(page, "#board")).toEqual([]);
    await s.shot(page, "dashboard-390px");

    await page.locator("#receipts button", { hasText: s.uncertainId }).click();
    await page.locator("#detail[open]").waitFor();
    expect(await midWordBreaks(page, "#detail")).toEqual([]);
    await s.shot(page, "dashboard-390px-detail");
    await page.close();
  });
  it("issue 37 item 1: a revoked machine shows as revoked, with the command that removes it, not as a heartbeat long ago", async () => {
    const db = s.fleet.controller.database.db;
    const longAgo = new Date(Date.now() - 30 * 24 * 3600_000);
    await db.insert(machines).values({
      name: "oldbox",
      endpoint: "reverse://oldbox",
      agentToken: "t",
      instanceId: "i",
      platform: "linux",
      capabilityVersion: 1,
      agentVersion: "0.1.0",
      registeredAt: longAgo,
      lastSeenAt: longAgo,
    });
    await db.insert(machineCerts).values({
      serial: "0ldb0x",
      machine: "oldbox",
      notAfter: new Date(Date.now() + 3600_000),
      revokedAt: new Date(),
    });
    const page = await s.open();
    const row = page.locator("#machines tbody tr", { hasText: "oldbox" });
    await row.waitFor();
    const text = await row.innerText();
    expect(text).toContain("revoked");
    expect(text).toContain("clankie fleet remove oldbox");
    expect(text).not.toMatch(/\d+(\.\d+)? ?(h|d) ago/);
    await page.close();
  });
});
