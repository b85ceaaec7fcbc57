/**
 * Issue 37 item 1, "remove what is gone": fleet remove (RemoveMachine) and seat rm (RemoveSeat)
 * through the real owner services, on a real controller, agents and database. Receipts and
 * their history stay; a revoked machine shows as revoked; the revoked agent is told so and
 * stops dialing.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import parsePrometheus from "parse-prometheus-text-format";
import { eq } from "drizzle-orm";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type RunningController } from "../../controller/main.js";
import { compileAgentConfig } from "../../node-agent/config.js";
import { startAgent, type RunningAgent } from "../../node-agent/main.js";
import { silentLogger } from "../../shared/logger.js";
import { FleetError } from "../../shared/errors.js";
import { deliveryReceipts, machineCerts } from "../../controller/db/schema.js";
import { ownerOf } from "../kit/owner.js";
import { connectLead } from "../kit/mcp-client.js";
import { prepareStore, tempDir, DRIVERS } from "../kit/test-db.js";

const until = async (what: string, f: () => Promise<boolean> | boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

/** docs/operations.md's ClankieAgentOffline: `a - b - … > 0` over single-value gauges. */
const OFFLINE_ALERT = /alert: ClankieAgentOffline\n[\s\S]*?expr: (\w+(?: - \w+)*) > 0\n/
  .exec(readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8"))![1]!
  .split(" - ");

const codeOf = async (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: unknown) => FleetError.from(e).code,
  );

describe.each(DRIVERS)("issue 37 item 1: removing machines and seats on %s", (driver) => {
  let controller: RunningController;
  let owner: ReturnType<typeof ownerOf>;
  let cleanup: () => Promise<void>;
  const agents: RunningAgent[] = [];

  beforeAll(async () => {
    const store = await prepareStore(driver);
    cleanup = store.cleanup;
    controller = await startController(
      compileControllerConfig({
        stateDir: store.stateDir,
        port: 0,
        databaseUrl: store.databaseUrl,
        heartbeatIntervalMs: 300,
      }),
      silentLogger,
    );
    owner = ownerOf(controller.url, controller.ownerToken);
  });
  afterAll(async () => {
    for (const a of agents) await a.close().catch(() => {});
    await controller?.close();
    await cleanup?.();
  });

  const dirs = new Map<string, string>();
  const start = async (machine: string) => {
    const dir = tempDir(`agent-${machine}`);
    dirs.set(machine, dir);
    const a = await startAgent(
      {
        ...compileAgentConfig({ stateDir: dir, controllerUrl: controller.agentUrl, machine }),
        joinToken: await owner.enroll(machine),
      },
      silentLogger,
    );
    agents.push(a);
    await a.linked;
    return a;
  };
  const machineRow = async (name: string) =>
    (await owner.status.listMachines({})).machines.find((m) => m.name === name);
  /** The value of the doc's agent-offline alert expression over a scrape of this controller's /metrics. */
  const offlineAlert = async () => {
    const res = await fetch(controller.metricsUrl, { headers: { authorization: `Bearer ${controller.ownerToken}` } });
    const families = new Map(parsePrometheus(await res.text()).map((f) => [f.name, f]));
    const gauge = (name: string) => Number(families.get(name)!.metrics[0]!.value);
    return OFFLINE_ALERT.slice(1).reduce((v, name) => v - gauge(name), gauge(OFFLINE_ALERT[0]!));
  };

  it("fleet remove refuses a machine that is online and not revoked, and one never enrolled", async () => {
    await start("live");
    await owner.owner.addSeat({ machine: "live", name: "box", kind: 1 });
    expect(await codeOf(owner.fleet.removeMachine({ machine: "live" }))).toBe("failed_precondition");
    expect(await codeOf(owner.fleet.removeMachine({ machine: "nobody" }))).toBe("not_found");
    expect(await codeOf(owner.owner.removeSeat({ seat: "live/box" }))).toBe("failed_precondition");
    expect((await owner.seats()).map((s) => s.id)).toContain("live/box");
  });

  it("a revoked machine: status says revoked, its agent is told machine_revoked and stops dialing", async () => {
    const agent = await start("gone");
    expect((await machineRow("gone"))?.revoked).toBe(false);
    await owner.fleet.revokeMachine({ machine: "gone" });
    expect(await machineRow("gone")).toMatchObject({ online: false, revoked: true });
    // The cut link's next heartbeat registers again, and the gateway answers machine_revoked.
    expect(await agent.revoked).toMatch(/certificate of gone revoked at/);
    const before = agent.linkedUrls().length;
    await new Promise((r) => setTimeout(r, 1500));
    expect([before, agent.linkedUrls().length]).toEqual([0, 0]);
    // Offline by the owner's choice: the doc's ClankieAgentOffline alert does not count it ("live" is linked).
    expect(OFFLINE_ALERT).toContain("clankie_fleet_agents_revoked");
    expect(await offlineAlert()).toBe(0);
  });

  it("fleet remove forgets a revoked machine with its seats and certificates; its receipts stay", async () => {
    const agent = await start("old");
    await owner.owner.addSeat({ machine: "old", name: "inbox", kind: 1 });
    const lead = await connectLead(controller.mcpUrl, controller.leadToken);
    let deliveryId: string;
    try {
      const r = await lead.call("message_seat", { seat: "old/inbox", message: "kept in the journal" });
      deliveryId = String(r.structuredContent!.deliveryId);
    } finally {
      await lead.close();
    }
    await owner.fleet.revokeMachine({ machine: "old" });
    await agent.revoked;
    const res = await owner.fleet.removeMachine({ machine: "old" });
    expect(res).toMatchObject({ machine: "old", seatIds: ["old/inbox"], was: "revoked" });
    expect(await machineRow("old")).toBeUndefined();
    expect((await owner.seats()).map((s) => s.id)).not.toContain("old/inbox");
    expect((await owner.fleet.listFleet({})).machines.map((m) => m.name)).not.toContain("old");
    const db = controller.database.db;
    expect(await db.select().from(machineCerts).where(eq(machineCerts.machine, "old"))).toEqual([]);
    const [kept] = await db.select().from(deliveryReceipts).where(eq(deliveryReceipts.id, deliveryId));
    expect(kept).toMatchObject({ seatId: "old/inbox", state: "delivered" });
    expect((await owner.status.getReceipt({ deliveryId })).receipt?.state).toBe("delivered");
    // Removed twice: the second finds nothing.
    expect(await codeOf(owner.fleet.removeMachine({ machine: "old" }))).toBe("not_found");
  });

  it("fleet remove takes a long-offline machine that was never revoked, and then refuses its certificate as removed", async () => {
    const agent = await start("quiet");
    await agent.close();
    await until("quiet to go offline", async () => (await machineRow("quiet"))?.online === false);
    // Offline and not revoked: the doc's alert counts it.
    expect(await offlineAlert()).toBe(1);
    expect((await owner.fleet.removeMachine({ machine: "quiet" })).was).toBe("offline");
    // The same identity, started again: the typed refusal says removed, and it never registers.
    const back = await startAgent(
      compileAgentConfig({ stateDir: dirs.get("quiet")!, controllerUrl: controller.agentUrl }),
      silentLogger,
    );
    agents.push(back);
    expect(await back.revoked).toMatch(/not on record: the machine was removed/);
    expect(await machineRow("quiet")).toBeUndefined();
  });

  it("seat rm forgets a seat of an offline machine and says how many unresolved receipts still name it", async () => {
    const agent = await start("laptop");
    await owner.owner.addSeat({ machine: "laptop", name: "notes", kind: 1 });
    await agent.close();
    await until("laptop to go offline", async () => (await machineRow("laptop"))?.online === false);
    expect(await codeOf(owner.owner.removeSeat({ seat: "nope/none" }))).toBe("unknown_seat");
    expect(await owner.owner.removeSeat({ seat: "laptop/notes" })).toMatchObject({
      seatId: "laptop/notes",
      unresolvedReceipts: 0,
    });
    expect((await owner.seats()).map((s) => s.id)).not.toContain("laptop/notes");
    // The machine itself stays until fleet remove.
    expect(await machineRow("laptop")).toBeDefined();
  });
});
