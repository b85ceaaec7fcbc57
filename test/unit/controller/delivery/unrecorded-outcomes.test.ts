/** Outcomes the journal missed are retried in order until each commits, never dropped while the controller runs. */
import { describe, expect, it } from "vitest";
import { UnrecordedOutcomes } from "../../../../controller/delivery/unrecorded-outcomes.js";
import { silentLogger } from "../../../../shared/logger.js";

describe("unrecorded-outcomes.UnrecordedOutcomes", () => {
  it("retries each outcome in order until the journal takes it, and stops at the first that still fails", async () => {
    let journalUp = false;
    const recorded: string[] = [];
    const q = new UnrecordedOutcomes(silentLogger, 20);
    const record = (what: string) => async () => {
      if (!journalUp) throw new Error("CONNECTION_CLOSED");
      recorded.push(what);
    };
    q.add("a", record("a"));
    q.add("b", record("b"));
    await q.flush();
    expect(q.size).toBe(2);
    expect(recorded).toEqual([]);
    journalUp = true;
    for (let i = 0; i < 100 && q.size; i++) await new Promise((r) => setTimeout(r, 10));
    expect(recorded).toEqual(["a", "b"]);
    q.close();
  });

  it("close drops what is left (boot recovery marks those receipts uncertain)", async () => {
    const q = new UnrecordedOutcomes(silentLogger, 10_000);
    q.add("x", async () => {
      throw new Error("down");
    });
    q.close();
    expect(q.size).toBe(0);
  });
});
