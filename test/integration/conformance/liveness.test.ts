/**
 * Rule 55 (fleet timings): a dead agent is shown offline, and its in-flight deliveries become
 * uncertain, within 10 s. The agent is a real child process, frozen with SIGSTOP: its sockets
 * stay open and nothing answers, as when its host vanishes. The deliver timeout is set far
 * beyond the test's own timeout, so the uncertainty can only come from the missed heartbeats.
 * The figures themselves are measured by the benchmark (`liveness.offline_detect_s`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS } from "../../kit/test-db.js";
import { startControllerUnderTest, type ControllerUnderTest } from "../../kit/controller-under-test.js";
import { compileControllerConfig } from "../../../controller/config.js";
import { MISSED_HEARTBEATS_OFFLINE } from "../../../controller/nodes/registry.js";
import { LIVENESS_CHECK_MS } from "../../../controller/nodes/liveness.js";

describe("rule 55: default liveness timings", () => {
  it("offline detection with the default heartbeat (3 missed + a call's first full check interval + one check) fits inside 10 s", () => {
    const { heartbeatIntervalMs } = compileControllerConfig({ stateDir: "/nonexistent" });
    // One full interval can pass between the death and the last heartbeat's age starting to count;
    // a call is looked at once it has waited one check interval, then at the next check.
    expect(heartbeatIntervalMs * (MISSED_HEARTBEATS_OFFLINE + 1) + 2 * LIVENESS_CHECK_MS).toBeLessThanOrEqual(10_000);
  });
});

describe.each(DRIVERS)("rule 55: a dead agent's in-flight delivery on %s", (driver) => {
  let t: ControllerUnderTest;
  beforeAll(async () => {
    t = await startControllerUnderTest(driver, { heartbeatIntervalMs: 500, deliverTimeoutMs: 600_000 });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("becomes uncertain when the agent stops heartbeating, not at the deliver timeout; the machine shows offline; nothing is resent", async () => {
    t.agent.freeze();
    const res = await t.lead.call("message_seat", { seat: "inbox", message: "sent to a vanished host" });
    expect(res.structuredContent).toMatchObject({
      outcome: "uncertain",
      deliveryStage: "uncertain",
      reconcileTool: "reconcile_seat_call",
    });
    expect(String(res.structuredContent!.detail)).toMatch(/went offline \(no heartbeat\)/);
    const box = (await t.owner.status.listMachines({})).machines.find((m) => m.name === "box");
    expect(box?.online).toBe(false);
    const id = res.structuredContent!.deliveryId as string;
    expect((await t.owner.receipts()).find((r) => r.deliveryId === id)?.state).toBe("uncertain");
    // Back online, the original is not replayed: the frozen agent's late write is the only one.
    t.agent.thaw();
    await t.waitOnline();
    const entries = () => t.mailbox.list("inbox").entries.filter((e) => e.text === "sent to a vanished host");
    expect(entries().length).toBeLessThanOrEqual(1);
  });
});
