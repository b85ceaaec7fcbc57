/**
 * Issue 34 item 3: `clankie mcp` with several replicas' URLs fails over between calls, under the
 * existing rule (ADR 0207 VUH-1638, ADR 0037): a replica that refused the connection got nothing,
 * so the call goes once to the next replica; a call in flight on a replica that dies is typed
 * uncertain with its id and never replayed. Real `clankie controller` processes (dist/) on one
 * PostgreSQL, real node agents with mailbox seats; the surviving replica sits behind a recording
 * proxy, so "never replayed" is counted on the wire. The first bridge is started from the lines
 * `clankie lead token --bridge-url` prints.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { AddSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { SeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { freshPostgres, tempDir } from "../kit/test-db.js";
import { startControllerProcess, type ControllerProcess } from "../kit/controller-process.js";
import { startAgentProcess, type AgentProcess } from "../kit/agent-process.js";
import { startBridgeProcess, type BridgeProcess } from "../kit/bridge-process.js";
import { ownerOf } from "../kit/owner.js";
import { runCli } from "../kit/cli.js";
import { startMcpFaultProxy, type McpFaultProxy } from "../fixtures/mcp-fault-proxy.js";

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  limitMs = 30_000,
): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() - t0 > limitMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const killed = async (c: ControllerProcess) => {
  const gone = new Promise((r) => c.child.once("exit", r));
  c.child.kill("SIGKILL");
  await gone;
};

describe.runIf(process.env.DATABASE_URL)(
  "issue 34 item 3: clankie mcp with several replicas' URLs (controller processes on one PostgreSQL)",
  () => {
    let pg: Awaited<ReturnType<typeof freshPostgres>>;
    let b: ControllerProcess;
    const doomed: ControllerProcess[] = [];
    let fast: AgentProcess;
    let slow: AgentProcess;
    let slowDir: string;
    let proxyB: McpFaultProxy;
    const bridges: BridgeProcess[] = [];
    const owner = () => ownerOf(b.url, b.ownerToken);
    const copies = (dir: string, seat: string, text: string) =>
      new MailboxStore(join(dir, "agent", "mailboxes")).list(seat).entries.filter((e) => e.text === text).length;

    /** A replica that will be killed, with its reverse links to both agents up (seats added through it ride them). */
    const startDoomed = async (name: string) => {
      const r = await startControllerProcess(tempDir(`replica-${name}`), pg.url);
      doomed.push(r);
      await until(`${name}'s links to both agents`, async () => {
        const ok = await Promise.all(
          [
            ["fast", "inbox"],
            ["slow", "stuck"],
          ].map(([machine, seat]) =>
            ownerOf(r.url, r.ownerToken)
              .owner.addSeat(create(AddSeatRequestSchema, { machine, name: seat, kind: SeatKind.MAILBOX }))
              .then(
                () => true,
                () => false,
              ),
          ),
        );
        return ok.every(Boolean) ? true : undefined;
      });
      return r;
    };

    beforeAll(async () => {
      pg = await freshPostgres();
      // B survives every kill: the agents' control traffic goes to it (issue 34 item 2 is another change).
      b = await startControllerProcess(tempDir("replica-b"), pg.url);
      slowDir = tempDir("slow");
      fast = await startAgentProcess({
        controllerUrl: b.agentUrl,
        stateDir: tempDir("fast"),
        machine: "fast",
        joinToken: await owner().enroll("fast"),
      });
      slow = await startAgentProcess({
        controllerUrl: b.agentUrl,
        stateDir: slowDir,
        machine: "slow",
        joinToken: await owner().enroll("slow"),
      });
      await until("both agents online", async () => {
        const ms = await owner()
          .status.listMachines({})
          .catch(() => ({ machines: [] }));
        return ["fast", "slow"].every((n) => ms.machines.some((m) => m.name === n && m.online)) ? true : undefined;
      });
      proxyB = await startMcpFaultProxy(b.url);
    }, 120_000);
    afterAll(async () => {
      for (const br of bridges) await br.close().catch(() => {});
      await proxyB?.close();
      slow?.thaw();
      await fast?.stop().catch(() => {});
      await slow?.stop().catch(() => {});
      for (const r of [...doomed, b]) await r?.stop();
      await pg?.drop();
    });

    it("the first replica killed between two calls: the next call goes to the second replica, once, and is delivered", async () => {
      const a = await startDoomed("a");
      // The bridge exactly as `clankie lead token --bridge-url …` prints it for a lead of this fleet.
      const printed = await runCli([
        "lead",
        "token",
        "--conversation",
        "failover",
        "--bridge-url",
        a.mcpUrl,
        "--bridge-url",
        `${proxyB.url}/mcp`,
        "--json",
        "--state-dir",
        b.stateDir,
      ]);
      expect(printed.code, printed.stderr).toBe(0);
      const { bridge: line } = JSON.parse(printed.stdout) as { bridge: { command: string; args: string[] } };
      expect(line.args.slice(1)).toEqual([
        "mcp",
        "--state-dir",
        b.stateDir,
        "--conversation",
        "failover",
        "--url",
        `${a.mcpUrl},${proxyB.url}/mcp`,
      ]);
      const bridge = await startBridgeProcess(line.args.slice(2));
      bridges.push(bridge);
      const first = await bridge.call("message_seat", { seat: "fast/inbox", message: "before the kill" });
      expect(first.structuredContent, JSON.stringify(first)).toMatchObject({ outcome: "delivered" });
      expect(proxyB.callsWithId(first.structuredContent!.deliveryId as string)).toBe(0);

      await killed(a);
      // Between calls: the kernel has closed A's sockets, as it would for any dead process.
      await new Promise((r) => setTimeout(r, 200));
      const next = await bridge.call("message_seat", { seat: "fast/inbox", message: "after the kill" });
      expect(next.structuredContent, JSON.stringify(next) + bridge.stderr()).toMatchObject({ outcome: "delivered" });
      const id = next.structuredContent!.deliveryId as string;
      expect(proxyB.callsWithId(id)).toBe(1);
      expect(bridge.stderr()).toContain("retrying once at the next replica");
      expect((await owner().receipts()).filter((r) => r.deliveryId === id)).toHaveLength(1);
      // And the call after it stays on the second replica.
      const third = await bridge.call("message_seat", { seat: "fast/inbox", message: "after the failover" });
      expect(third.structuredContent).toMatchObject({ outcome: "delivered" });
      expect(proxyB.callsWithId(third.structuredContent!.deliveryId as string)).toBe(1);
    });

    it("a call in flight on a replica that dies is uncertain with its id and never replayed; the next call goes to the second replica", async () => {
      const c = await startDoomed("c");
      const bridge = await startBridgeProcess([
        "--url",
        c.mcpUrl,
        "--url",
        `${proxyB.url}/mcp`,
        "--token-file",
        join(b.stateDir, "lead.token"),
      ]);
      bridges.push(bridge);
      expect((await bridge.call("list_seats", {})).isError).toBeFalsy();
      slow.freeze();
      const pending = bridge.call("message_seat", { seat: "slow/stuck", message: "in flight at the kill" });
      const stuckId = await until(
        "the in-flight receipt",
        async () =>
          (await owner().receipts()).find((r) => r.seatId === "slow/stuck" && r.state === "dispatching")?.deliveryId,
      );
      await killed(c);
      const lost = await pending;
      expect(lost.isError).toBe(true);
      expect(lost.structuredContent).toMatchObject({
        outcome: "uncertain",
        deliveryId: stuckId,
        tool: "message_seat",
        reconcileTool: "reconcile_seat_call",
      });

      const next = await bridge.call("message_seat", { seat: "fast/inbox", message: "after the in-flight kill" });
      expect(next.structuredContent, JSON.stringify(next)).toMatchObject({ outcome: "delivered" });
      expect(proxyB.callsWithId(next.structuredContent!.deliveryId as string)).toBe(1);
      // Never replayed: not to the second replica, and the journal holds one receipt for the id.
      expect(proxyB.callsWithId(stuckId)).toBe(0);
      expect(bridge.stderr()).not.toContain("retrying once");
      slow.thaw();
      const rec = await bridge.call("reconcile_seat_call", { deliveryId: stuckId });
      expect(rec.structuredContent, JSON.stringify(rec.structuredContent)).toMatchObject({ deliveryId: stuckId });
      expect(["uncertain", "delivered", "undelivered"]).toContain(rec.structuredContent!.outcome);
      expect(proxyB.calls.filter((x) => x.tool === "message_seat" && x.seatCallId === stuckId)).toHaveLength(0);
      expect((await owner().receipts()).filter((r) => r.deliveryId === stuckId)).toHaveLength(1);
      expect(copies(slowDir, "stuck", "in flight at the kill")).toBeLessThanOrEqual(1);
    });
  },
);
