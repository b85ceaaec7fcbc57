/**
 * Issue 34 item 2 (ADR 0038, controller/nodes/link-vouch.ts): a machine is online while any
 * replica holds a live link it answers on, even when its heartbeats stopped arriving. The agent
 * here stops heartbeating (its gateway link is stopped) while its reverse link keeps serving:
 * it stays online and a delivery to it is delivered. Once the agent is gone for real (sockets
 * dropped, nothing answers), it is shown offline within rule 55's 10 s as before.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { ownerOf } from "../kit/owner.js";
import { connectLead } from "../kit/mcp-client.js";
import { until } from "../kit/until.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(DRIVERS)("issue 34 item 2 on %s: liveness by a live link", (driver) => {
  let fleet: TestFleet | undefined;
  afterEach(async () => {
    await fleet?.close();
    fleet = undefined;
  });

  it("an agent whose heartbeats stopped but that answers on the replica's link stays online and is delivered to; gone for good, it is offline within 10 s", async () => {
    fleet = await startFleet(driver, { heartbeatIntervalMs: 1000 });
    const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.addMailbox("inbox");
    const online = async () => (await owner.status.listMachines({})).machines.find((m) => m.name === "testbox")?.online;
    await until(online, "testbox online");

    // No more heartbeats, seat reports or registrations: only the reverse link is left.
    fleet.agent.link.stop();
    const seen: boolean[] = [];
    for (let i = 0; i < 30; i++) {
      seen.push((await online()) === true);
      await sleep(200);
    }
    // 6 s without a heartbeat, twice the 3 s offline threshold.
    expect(seen.every(Boolean), `online samples ${seen.map((s) => (s ? 1 : 0)).join("")}`).toBe(true);
    const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    try {
      const res = await lead.call("message_seat", { seat: "inbox", message: "no heartbeat, live link" });
      expect(res.structuredContent).toMatchObject({ outcome: "delivered" });
    } finally {
      await lead.close();
    }

    await fleet.agent.close();
    const gone = performance.now();
    await until(async () => (await online()) === false, "testbox offline after its agent stopped", 100);
    expect(performance.now() - gone).toBeLessThan(10_000);
  }, 60_000);
});
