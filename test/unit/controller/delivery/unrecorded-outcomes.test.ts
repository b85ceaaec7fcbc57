/**
 * Outcomes the journal missed are retried in order until each commits, never dropped while the
 * controller runs, and kept on disk so the next boot records them before recovery (rule: a
 * decided answer is never turned into another).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  UnrecordedOutcomes,
  isHireSettle,
  recordSpilled,
  type PendingSettle,
} from "../../../../controller/delivery/unrecorded-outcomes.js";
import type { HireSettleParams } from "../../../../controller/journal/hire-outcome.js";
import type { SettleParams } from "../../../../controller/delivery/receipt-types.js";
import { silentLogger } from "../../../../shared/logger.js";
import { tempDir } from "../../../kit/test-db.js";

const params = (id: string): SettleParams => ({
  id,
  seatId: "m/s",
  conversationId: "c",
  contentFingerprint: "f",
  callState: "settled",
  body: { outcome: "undelivered" },
  outcome: { state: "not_sent", reason: "journal_unavailable" },
  previousIds: [],
  holder: null,
  leaseSeconds: 30,
  now: new Date(1_700_000_000_000),
});

describe("unrecorded-outcomes.UnrecordedOutcomes", () => {
  it("retries each outcome in order until the journal takes it, and stops at the first that still fails", async () => {
    let journalUp = false;
    const recorded: string[] = [];
    const q = new UnrecordedOutcomes(
      silentLogger,
      async (p) => {
        if (!journalUp) throw new Error("CONNECTION_CLOSED");
        recorded.push(p.id);
      },
      undefined,
      20,
    );
    q.add("a", params("a"));
    q.add("b", params("b"));
    await q.flush();
    expect(q.size).toBe(2);
    expect(recorded).toEqual([]);
    journalUp = true;
    for (let i = 0; i < 100 && q.size; i++) await new Promise((r) => setTimeout(r, 10));
    expect(recorded).toEqual(["a", "b"]);
    q.close();
  });

  it("a pending outcome is on disk until it commits; the next boot records it (with its time) and removes the file", async () => {
    const file = join(tempDir("spill"), "unrecorded-outcomes.json");
    const q = new UnrecordedOutcomes(
      silentLogger,
      async () => {
        throw new Error("down");
      },
      file,
      10_000,
    );
    q.add("x", params("x"));
    expect(existsSync(file)).toBe(true);
    q.close();
    const replayed: PendingSettle[] = [];
    expect(await recordSpilled(file, async (p) => replayed.push(p))).toBe(1);
    expect(replayed[0]).toMatchObject({
      id: "x",
      outcome: { state: "not_sent", reason: "journal_unavailable" },
      holder: null,
    });
    expect(replayed[0]!.now).toEqual(new Date(1_700_000_000_000));
    expect(existsSync(file)).toBe(false);
    expect(await recordSpilled(file, async () => undefined)).toBe(0);
  });

  it("keeps a hire's settle on disk beside a dispatch's, in order, and the next boot records both as they were", async () => {
    const file = join(tempDir("clankie-unrecorded-"), "unrecorded.json");
    const hire: HireSettleParams = {
      kind: "hire",
      id: "h",
      state: "failed",
      unresolved: false,
      body: {
        schemaVersion: 1,
        outcome: "failed",
        hireId: "h",
        machine: "m",
        harness: "pi",
        reason: "machine_offline",
        detail: "d",
        launchCommitted: false,
      },
      now: new Date(1_700_000_000_000),
    };
    const q = new UnrecordedOutcomes(
      silentLogger,
      async () => {
        throw new Error("down");
      },
      file,
      10_000,
    );
    q.add("hire h", hire);
    q.add("x", params("x"));
    q.close();
    const replayed: PendingSettle[] = [];
    expect(await recordSpilled(file, async (p) => replayed.push(p))).toBe(2);
    expect(replayed.map(isHireSettle)).toEqual([true, false]);
    expect(replayed[0]).toEqual(hire);
    expect(replayed[1]).toMatchObject({ id: "x", holder: null });
  });
});
