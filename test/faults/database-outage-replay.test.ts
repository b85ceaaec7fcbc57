/**
 * ADR 0033, a refused admission recorded by id — the replay case: a lead replays an id whose
 * original is admitted here and still in flight, and the replay's own admission gets no answer
 * (the database froze). The replay inserted nothing of its own, so no refusal is recorded for
 * it: the original keeps its receipt dispatching and its seat's lease, and delivers once. A
 * refusal recorded then would have settled the in-flight original not sent and freed its seat
 * while it was still being dispatched. The same holds for a hire whose original is reserved and
 * not yet launched. A real PostgreSQL behind a relay that freezes; the original is parked after
 * its admission by the pipeline's injected fault points.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ParkPoint } from "../../controller/delivery/faults.js";
import { startOutageFleet, type OutageFleet } from "../kit/outage-fleet.js";
import { available } from "../kit/requirements.js";
import { until } from "../kit/until.js";

const META = "clankie/seat-call";

describe.runIf(available("postgres"))("a replay refused while its original is in flight", () => {
  let outage: OutageFleet;
  let park: ParkPoint | undefined;
  let parked: () => void = () => {};
  let release: () => void = () => {};
  beforeAll(async () => {
    outage = await startOutageFleet({
      faults: {
        at: (p: ParkPoint) => {
          if (p !== park) return Promise.resolve();
          park = undefined;
          return new Promise<void>((r) => {
            release = r;
            parked();
          });
        },
      },
    });
  });
  afterAll(async () => {
    release();
    await outage?.close();
  });

  /** The replay, made while the database answers nothing: refused for want of an answer, and no refusal kept for its id; then the thaw. */
  async function replayWhileFrozen(
    id: string,
    replay: () => Promise<{ structuredContent?: unknown; content?: unknown }>,
  ): Promise<void> {
    const { lead, proxy, fleet } = outage;
    // A fresh token check, so the replay reaches admission before the 2 s token cache runs out.
    expect((await lead.call("list_seats", {})).isError).toBeFalsy();
    proxy.freeze();
    const res = await replay().catch((e: Error) => e);
    expect(res instanceof Error ? res.message : JSON.stringify(res.structuredContent ?? res.content)).toMatch(
      /journal_unavailable.*did not answer/,
    );
    const spill = join(fleet.stateDir, "unrecorded-outcomes.json");
    expect(existsSync(spill) ? readFileSync(spill, "utf8") : "").not.toContain(id);
    proxy.thaw();
    await until(
      async () => !(await lead.call("list_seats", {}).catch(() => ({ isError: true }))).isError,
      "the journal answering again",
    );
  }

  it("ADR 0033: the replay is refused journal_unavailable and records no refusal; the original keeps its seat and delivers once", async () => {
    const { lead, owner, mailbox } = outage;
    const id = randomUUID();
    const text = "the original, parked after its admission";
    const atPark = new Promise<void>((r) => (parked = r));
    park = "hang_after_admit";
    const original = lead.call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } });
    await atPark;
    await replayWhileFrozen(id, () =>
      lead.call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } }),
    );
    // The replay's held admission has run by now (it inserted nothing); the original is untouched.
    const before = (await owner.receipts()).find((r) => r.deliveryId === id);
    expect(before?.state).toBe("dispatching");
    release();
    const res = await original;
    expect(res.structuredContent).toMatchObject({ outcome: "delivered", deliveryId: id });
    expect(mailbox.list("inbox").entries.filter((e) => e.deliveryId === id)).toHaveLength(1);
    expect((await owner.receipts()).find((r) => r.deliveryId === id)?.state).toBe("delivered");
  }, 60_000);

  it("ADR 0033: a hire's replay is refused journal_unavailable and records no refusal; the reserved original goes on to the agent once", async () => {
    const { lead } = outage;
    const id = randomUUID();
    // A working directory the agent does not have: the original, once released, is refused there before any launch.
    const gone = mkdtempSync(join(tmpdir(), "clankie-replay-hire-"));
    rmSync(gone, { recursive: true });
    const args = {
      harness: "codex",
      workingDirectory: gone,
      title: "worker",
      role: "tester",
      brief: "the original, parked after its admission",
    };
    const atPark = new Promise<void>((r) => (parked = r));
    park = "hang_after_hire_admit";
    const original = lead.call("hire_agent", args, { [META]: { hireId: id } });
    await atPark;
    await replayWhileFrozen(id, () => lead.call("hire_agent", args, { [META]: { hireId: id } }));
    // Still the original's: in flight, not settled failed journal_unavailable by a refusal.
    const still = await lead.call("reconcile_seat_call", { hireId: id });
    expect(still.structuredContent).toMatchObject({
      reason: "start_unconfirmed",
      deliveryStage: "uncertain",
      hireId: id,
    });
    expect((still.structuredContent as { detail?: string }).detail).toMatch(/still in flight/);
    release();
    const res = await original;
    // The agent's own answer (the directory is missing), not the replay's refusal.
    expect(res.structuredContent).toMatchObject({ outcome: "failed", hireId: id });
    expect((res.structuredContent as { reason?: string }).reason).not.toBe("journal_unavailable");
    expect((await lead.call("reconcile_seat_call", { hireId: id })).structuredContent).toMatchObject({
      outcome: "failed",
      reason: (res.structuredContent as { reason?: string }).reason,
    });
  }, 60_000);
});
