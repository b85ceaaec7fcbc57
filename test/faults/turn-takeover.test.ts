/**
 * ADR 0043 with real processes on one PostgreSQL: a replica killed (kill -9) while it holds a seat's
 * turn no longer stalls that seat for its whole instance lease (10 s). Replica A parks every delivery
 * right after its admission (CLANKIE_FAULT=hang_after_admit: it holds the seat's lease, nothing sent);
 * replica B's message to the same seat waits in line. Once A is killed, B finds A's lease renewal
 * overdue, the agent (which has no live link to A and no Deliver of A's epoch in flight) fences A's
 * epoch, and B takes the seat's turn over: B's message is delivered while A's receipt is still in
 * flight, seconds before A's lease would have let recovery free the seat. A's receipt is then marked
 * uncertain by recovery, as before (never replayed), and A's message never reaches the seat.
 */
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { startAgentProcess, type AgentProcess } from "../kit/agent-process.js";
import { startControllerProcess, type ControllerProcess } from "../kit/controller-process.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { available } from "../kit/requirements.js";
import { freshPostgres, tempDir } from "../kit/test-db.js";
import { until } from "../kit/until.js";

const SEAT = "takeoverbox/inbox";

describe.runIf(available("postgres"))(
  "ADR 0043: a killed replica's seat turn is taken over early, fenced at the agent",
  () => {
    const cleanups: (() => Promise<unknown>)[] = [];
    let sql: postgres.Sql;
    let a: ControllerProcess;
    let b: ControllerProcess;
    let agent: AgentProcess;
    let leadA: LeadClient;
    let leadB: LeadClient;
    let mailbox: MailboxStore;

    beforeAll(async () => {
      const pg = await freshPostgres();
      cleanups.push(() => pg.drop());
      sql = postgres(pg.url, { max: 1, onnotice: () => {} });
      cleanups.push(() => sql.end());
      const stateDir = tempDir("takeover-replicas");
      b = await startControllerProcess(stateDir, pg.url);
      cleanups.push(() => b.stop());
      a = await startControllerProcess(stateDir, pg.url, { CLANKIE_FAULT: "hang_after_admit" });
      cleanups.push(() => a.stop().catch(() => {}));
      const owner = ownerOf(b.url, b.ownerToken);
      const agentDir = tempDir("takeover-agent");
      agent = await startAgentProcess({
        controllerUrl: b.agentUrl,
        stateDir: agentDir,
        machine: "takeoverbox",
        joinToken: await owner.enroll("takeoverbox"),
      });
      cleanups.push(() => agent.stop());
      await until(
        async () =>
          await owner.addMailbox("inbox").then(
            () => true,
            () => false,
          ),
        "the mailbox seat added on the linked agent",
        200,
      );
      mailbox = new MailboxStore(join(agentDir, "agent", "mailboxes"));
      leadA = await connectLead(a.mcpUrl, b.leadToken);
      leadB = await connectLead(b.mcpUrl, b.leadToken);
      cleanups.push(() => leadB.close());
      await until(
        async () =>
          (await leadB.call("message_seat", { seat: "inbox", message: `warm-up ${Date.now()}` })).structuredContent
            ?.outcome === "delivered" || undefined,
        "a delivery through B",
        500,
      );
    }, 120_000);
    afterAll(async () => {
      for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
    });

    const holder = async () =>
      (await sql<{ holder: string }[]>`select holder from seat_turns where seat_id = ${SEAT}`)[0]?.holder;
    const receipt = async (id: string) =>
      (
        await sql<
          { state: string; call_state: string }[]
        >`select d.state, c.state as call_state from delivery_receipts d join operator_call_receipts c on c.id = d.id where d.id = ${id}`
      )[0];

    it("kill -9 of the replica holding the seat's turn: the next delivery goes in seconds, A's receipt stays in flight until recovery marks it uncertain", async () => {
      const aInstance = (
        await sql<{ id: string }[]>`select id from controller_instances order by started_at desc limit 1`
      )[0]!.id;
      // A admits and holds the seat's turn, parked before anything is sent.
      void leadA.call("message_seat", { seat: "inbox", message: "through A, never sent" }).catch(() => {});
      await until(async () => (await holder())?.startsWith(`${aInstance}:`) || undefined, "A holding the seat", 20);
      const aId = (await holder())!.split(":")[1]!;
      const waiting = leadB.call("message_seat", { seat: "inbox", message: "through B, behind A" });
      await until(
        async () =>
          Number((await sql`select count(*)::int as n from seat_waiters where seat_id = ${SEAT}`)[0]!.n) === 1 ||
          undefined,
        "B's delivery in the seat's line",
        20,
      );
      process.kill(a.pid, "SIGKILL");
      const killedAt = performance.now();
      const answer = await waiting;
      const tookMs = performance.now() - killedAt;
      expect(answer.structuredContent).toMatchObject({ outcome: "delivered" });
      // Taken over before A's lease (10 s) let recovery free the seat: A's call is still in flight.
      expect(await receipt(aId)).toMatchObject({ state: "dispatching", call_state: "in_flight" });
      expect(tookMs).toBeLessThan(8_000);
      // Recovery, once A's lease expired, marks it uncertain as before: never replayed.
      await until(async () => (await receipt(aId))?.call_state === "uncertain" || undefined, "A's call recovered", 250);
      expect(await receipt(aId)).toMatchObject({ state: "uncertain", call_state: "uncertain" });
      const texts = mailbox.list("inbox").entries.map((e) => e.text);
      expect(texts).toContain("through B, behind A");
      expect(texts).not.toContain("through A, never sent");
    }, 60_000);
  },
);
