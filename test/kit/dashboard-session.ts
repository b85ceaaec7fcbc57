/**
 * A realistic session for the dashboard's browser suites and their screenshots (issue 37 item
 * 5): one machine, three mailbox seats with real-looking titles, an hour of a nightly triage
 * lead's receipts (mostly delivered, some queued, a few refused as stale), one delivery made
 * through MCP now, one uncertain original with its open fence, and two hires (one spawned with
 * its readiness proofs, one refused for a missing harness). No test markup in any title.
 * Chromium: Debian's, driven by playwright-core. CLANKIE_SCREENSHOTS=docs writes the shots.
 */
import { mkdirSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { chromium, type Browser, type Page } from "playwright-core";
import { create } from "@bufbuild/protobuf";
import { AddSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { SeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { callReceipts, deliveryReceipts, fences } from "../../controller/db/schema.js";
import { startFleet, type TestFleet } from "./start-fleet.js";
import { connectLead } from "./mcp-client.js";
import { ownerOf } from "./owner.js";
import { CHROMIUM } from "./requirements.js";
import { recordHire } from "./hire-records.js";

// As the machine's probe found: without the background-networking flags Chromium's own calls are refused here.
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const SHOTS_DIR = new URL("../../docs/screenshots/", import.meta.url).pathname;
const SHOTS = process.env.CLANKIE_SCREENSHOTS === "docs" ? SHOTS_DIR : undefined;

export const MACHINE = "devbox";
export const INBOX = `${MACHINE}/inbox`;
export const REVIEWS = `${MACHINE}/reviews`;
/** History receipts: 60 in all, 10 not_sent, 10 queued, 40 delivered, over the last 50 minutes. */
export const HISTORY = { conversation: "nightly-triage", total: 60, notSent: 10 };

export interface DashboardSession {
  fleet: TestFleet;
  browser: Browser;
  deliveryId: string;
  uncertainId: string;
  spawnedHireId: string;
  failedHireId: string;
  open(width?: number, height?: number): Promise<Page>;
  shot(page: Page, name: string): Promise<void>;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
}

export async function startDashboardSession(): Promise<DashboardSession> {
  const fleet = await startFleet("pglite", {}, { machine: MACHINE });
  const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
  const seat = (name: string, title: string) =>
    owner.owner.addSeat(create(AddSeatRequestSchema, { name, kind: SeatKind.MAILBOX, title }));
  await seat("inbox", "Release notes for 0.4");
  await seat("reviews", "Code review queue");
  const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
  const message = "Draft the 0.4 release notes from the merged PRs.";
  const res = await lead.call("message_seat", { seat: "inbox", message });
  const deliveryId = res.structuredContent!.deliveryId as string;
  await lead.close();

  const db = fleet.controller.database.db;
  const base = Date.now() - 50 * 60_000;
  await db.insert(deliveryReceipts).values(
    Array.from({ length: HISTORY.total }, (_, i) => {
      const state = i % 6 === 0 ? "not_sent" : i % 6 === 3 ? "queued" : "delivered";
      const detail =
        state === "not_sent"
          ? "proof_stale: the seat's proof was older than the gate allows; nothing was written"
          : state === "queued"
            ? "queued behind the seat's current turn"
            : "stored durably in the mailbox";
      const createdAt = new Date(base + i * 50_000);
      return {
        id: randomUUID(),
        conversationId: HISTORY.conversation,
        seatId: i % 2 ? INBOX : REVIEWS,
        contentFingerprint: `fp-${i}`,
        mode: "auto",
        state,
        detail,
        createdAt,
        settledAt: new Date(createdAt.getTime() + 8 + ((i * 37) % 140)),
      };
    }),
  );
  const uncertainId = randomUUID();
  const lost = "the agent's answer was lost after the write began; reconcile it, never resend";
  const conversationId = "release-0.4";
  await db.insert(deliveryReceipts).values({
    id: uncertainId,
    conversationId,
    seatId: INBOX,
    contentFingerprint: "fp-lost",
    mode: "auto",
    state: "uncertain",
    reason: "answer_lost",
    detail: lost,
  });
  const result = { schemaVersion: 1, outcome: "uncertain", detail: lost };
  const tool = "message_seat";
  const call = { id: uncertainId, tool, conversationId, fingerprint: "call-lost", state: "uncertain", result };
  await db.insert(callReceipts).values(call);
  const fence = { deliveryId: uncertainId, seatId: INBOX, contentFingerprint: "fp-lost", conversationId };
  await db.insert(fences).values(fence);

  const spawnedHireId = randomUUID();
  const failedHireId = randomUUID();
  await recordHire(db, fleet.stateDir, {
    id: failedHireId,
    machine: MACHINE,
    harness: "codex",
    createdAt: new Date(Date.now() - 40 * 60_000),
    answer: {
      outcome: "failed",
      reason: "harness_unavailable",
      detail: "codex is not installed on devbox; nothing was launched",
      controlReason: "harness_unavailable",
      controlFix: "install codex on devbox (npm i -g @openai/codex), then hire again",
    },
  });
  await recordHire(db, fleet.stateDir, {
    id: spawnedHireId,
    machine: MACHINE,
    harness: "claude",
    createdAt: new Date(Date.now() - 12 * 60_000),
    answer: {
      outcome: "spawned",
      detail: "claude started in pane %3 as seat release-writer; the brief went in natively (started)",
      seat: { name: "release-writer", kind: SeatKind.CLAUDE, occupantId: randomUUID() },
      paneId: "%3",
      briefMechanism: "started",
      briefDeliveryId: randomUUID(),
      proofs: [
        { kind: "pane_alive", outcome: "proven", detail: "pane %3 runs claude (pid 48211)", ageAtWriteMs: 14 },
        { kind: "channel_listening", outcome: "proven", detail: "the clankie channel answered", ageAtWriteMs: 31 },
        { kind: "session_file", outcome: "proven", detail: "the session transcript is open", ageAtWriteMs: 46 },
      ],
      launchCommitted: true,
    },
  });

  const browser = await launchChromium();
  return {
    fleet,
    browser,
    deliveryId,
    uncertainId,
    spawnedHireId,
    failedHireId,
    async open(width = 1280, height = 900) {
      const page = await browser.newPage({ viewport: { width, height } });
      await page.goto(`${fleet.controller.dashboardUrl}#token=${fleet.controller.ownerToken}`);
      await page.locator("#live", { hasText: "live" }).waitFor();
      return page;
    },
    shot: screenshot,
    async close() {
      await browser.close();
      await fleet.close();
    },
  };
}

/**
 * Words broken across lines on the page as rendered: each run between break opportunities
 * (spaces, "-", "/", "_") must sit on one line, so "1.0 min" or "12:04" split is a break too.
 * Text scrolled away inside a table's box counts; hidden text does not.
 */
export function midWordBreaks(page: Page, within = "body"): Promise<string[]> {
  return page.evaluate((selector) => {
    const root = document.querySelector(selector)!;
    const broken: string[] = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode() as Text | null; n; n = walker.nextNode() as Text | null) {
      const el = n.parentElement;
      if (!el || el.closest("script, style, select, datalist") || el.getClientRects().length === 0) continue;
      for (const m of n.data.matchAll(/[^\s\-/_]+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        const lines = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
        if (lines.size > 1) broken.push(m[0]);
      }
    }
    return broken;
  }, within);
}
