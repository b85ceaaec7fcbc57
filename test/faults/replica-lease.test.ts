/**
 * Issue 34 item 1 (ADR 0036) with real processes on one PostgreSQL: replica A a plain child, replica
 * B in its own PID namespace on this host (its pid, 50000, names no process here, and its host name
 * is ours: the old (hostname, pid) rule declared it dead within one heartbeat), one agent process
 * with a mailbox seat, linked to both. A delivery is made slow by freezing the agent (SIGSTOP) for a
 * few seconds, less than it takes to be judged offline.
 *
 * - B's lease is renewed, so A never takes over B's in-flight call or its seat lease: B's slow
 *   deliveries settle delivered, and A's message to the same seat waits for B's turn.
 * - A SIGSTOPped past its lease is taken over by B (its call uncertain, fenced, its seat lease
 *   freed); after SIGCONT A writes nothing (its receipt and the seat's turn stay as B left them),
 *   sends nothing it had not sent (a call still waiting for the seat is refused before the send),
 *   and its lead hears the receipt as the fleet records it, never "delivered".
 */
import { hostname } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isProcessAlive } from "../../shared/process-alive.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { startAgentProcess, type AgentProcess } from "../kit/agent-process.js";
import { startControllerProcess, type ControllerProcess } from "../kit/controller-process.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { available } from "../kit/requirements.js";
import { freshPostgres, tempDir } from "../kit/test-db.js";
import { until } from "../kit/until.js";

const SEAT = "leasebox/inbox";
/** Less than the 3 missed heartbeats (6 s) after which the agent's machine is offline and its calls cut. */
const SLOW_MS = 3_500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(available("postgres"))(
  "issue 34 item 1: instance liveness is a lease in the database, and a replica past it is fenced",
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
      // One state directory: the two replicas share their tokens (issue 34 item 3 is another helper's).
      const stateDir = tempDir("lease-replicas");
      a = await startControllerProcess(stateDir, pg.url);
      cleanups.push(() => a.stop());
      b = await startControllerProcess(stateDir, pg.url, {}, { pidNamespace: true });
      cleanups.push(() => b.stop());
      const owner = ownerOf(b.url, b.ownerToken);
      const agentDir = tempDir("lease-agent");
      agent = await startAgentProcess({
        controllerUrl: b.agentUrl,
        stateDir: agentDir,
        machine: "leasebox",
        joinToken: await owner.enroll("leasebox"),
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
      cleanups.push(
        () => leadA.close(),
        () => leadB.close(),
      );
      // Both replicas reach the agent (it links to every replica it learns of, ADR 0021).
      for (const [lead, who] of [
        [leadA, "A"],
        [leadB, "B"],
      ] as const) {
        await until(
          async () =>
            (await lead.call("message_seat", { seat: "inbox", message: `warm-up through ${who} ${Date.now()}` }))
              .structuredContent?.outcome === "delivered"
              ? true
              : undefined,
          `a delivery through ${who}`,
          500,
        );
      }
    }, 120_000);
    afterAll(async () => {
      // A failed step may leave a process stopped: resumed first, so each stops in its own time.
      for (const resume of [() => process.kill(a.pid, "SIGCONT"), () => agent.thaw()]) {
        try {
          resume();
        } catch {}
      }
      for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
    });

    const instances = async () =>
      sql<
        { id: string; pid: number; host: string; epoch: string }[]
      >`select id, pid, host, epoch::text from controller_instances order by started_at`;
    const holder = async () =>
      (await sql<{ holder: string }[]>`select holder from seat_turns where seat_id = ${SEAT}`)[0]?.holder;
    const receipt = async (id: string) =>
      (
        await sql`select d.state, d.reason, d.detail, d.settled_at, c.state as call_state, c.result, c.controller_epoch::text from delivery_receipts d join operator_call_receipts c on c.id = d.id where d.id = ${id}`
      )[0];
    const newestReceipt = async (after: Set<string>) => {
      let id: string | undefined;
      await until(
        async () =>
          (id = (await sql<{ id: string }[]>`select id from delivery_receipts order by created_at`)
            .map((r) => r.id)
            .find((x) => !after.has(x))),
        "a new admission",
        20,
      );
      return id!;
    };
    const known = async () => new Set((await sql<{ id: string }[]>`select id from delivery_receipts`).map((r) => r.id));

    it("a replica in its own PID namespace on this host, renewing its lease, is never taken over: its slow deliveries settle delivered, and no second delivery reaches the seat meanwhile", async () => {
      // The old rule's premise: same host name, and a pid no process here has.
      const rows = await instances();
      expect(rows).toHaveLength(2);
      const bRow = rows.find((r) => r.pid === 50_000);
      expect(bRow, "B runs as pid 50000 in its namespace").toBeDefined();
      expect(bRow!.host).toBe(hostname());
      expect(isProcessAlive(50_000)).toBe(false);

      for (let round = 0; round < 3; round++) {
        const before = await known();
        agent.freeze();
        const slow = leadB.call("message_seat", { seat: "inbox", message: `slow through B, round ${round}` });
        const slowId = await newestReceipt(before);
        await until(async () => ((await holder())?.endsWith(slowId) ? true : undefined), "B holding the seat", 20);
        const meanwhile = leadA.call("message_seat", { seat: "inbox", message: `meanwhile through A, round ${round}` });
        // While B's call is in flight the seat stays B's and B's call stays in flight: A takes over nothing.
        const seen = new Set<string>();
        const until_ = performance.now() + SLOW_MS;
        while (performance.now() < until_) {
          seen.add(`${(await holder()) ?? "free"} / ${(await receipt(slowId))?.call_state}`);
          await sleep(50);
        }
        agent.thaw();
        expect([...seen]).toEqual([`${bRow!.id}:${slowId} / in_flight`]);
        expect((await slow).structuredContent).toMatchObject({ outcome: "delivered", deliveryId: slowId });
        const second = await meanwhile;
        expect(second.structuredContent).toMatchObject({ outcome: "delivered" });
        expect(await receipt(slowId)).toMatchObject({ state: "delivered", call_state: "settled" });
        // A's message reached the seat after B's, never alongside it.
        const texts = mailbox.list("inbox").entries.map((e) => e.text);
        expect(texts.indexOf(`slow through B, round ${round}`)).toBeLessThan(
          texts.indexOf(`meanwhile through A, round ${round}`),
        );
        await sleep(500);
      }
    }, 120_000);

    it("a replica SIGSTOPped past its lease is taken over, and after SIGCONT it writes nothing, sends nothing more, and its lead hears uncertain", async () => {
      const aRow = (await instances()).find((r) => r.pid === a.pid)!;
      // 1. A's delivery is on its way to the (frozen) agent; 2. A's second call waits behind B's slow one.
      const before = await known();
      agent.freeze();
      const sent = leadA.call("message_seat", { seat: "inbox", message: "through A, then A paused" });
      const sentId = await newestReceipt(before);
      await until(async () => ((await holder())?.endsWith(sentId) ? true : undefined), "A holding the seat", 20);
      await sleep(300);
      process.kill(a.pid, "SIGSTOP");
      const stoppedAt = performance.now();
      agent.thaw();
      await until(
        async () => (await receipt(sentId))?.call_state === "uncertain" || undefined,
        "B taking over A's call once A's lease expired",
        300,
      );
      const takenAfterMs = performance.now() - stoppedAt;
      // Not before the lease (10 s, judged by the database's clock) ran out.
      expect(takenAfterMs).toBeGreaterThan(8_000);
      const taken = await receipt(sentId);
      expect(taken).toMatchObject({
        state: "uncertain",
        reason: "controller_stopped",
        call_state: "uncertain",
        controller_epoch: null,
      });
      expect(
        await sql`select delivery_id from fences where delivery_id = ${sentId} and resolved_at is null`,
      ).toHaveLength(1);

      // The seat is free again for the fleet: B delivers through it while A is still paused.
      const afterTakeover = await leadB.call("message_seat", { seat: "inbox", message: "through B while A is paused" });
      expect(afterTakeover.structuredContent).toMatchObject({ outcome: "delivered" });
      const turnsBefore = await sql`select seat_id, holder from seat_turns`;

      process.kill(a.pid, "SIGCONT");
      const answer = await sent;
      // The receipt as the fleet records it: uncertain, never "delivered" written over it.
      expect(answer.structuredContent).toMatchObject({ outcome: "uncertain", deliveryId: sentId });
      await sleep(3_000);
      expect(await receipt(sentId)).toEqual(taken);
      expect(await sql`select seat_id, holder from seat_turns`).toEqual(turnsBefore);
      // It re-registered with a new epoch, loudly, and serves again.
      await until(
        async () =>
          (await instances()).find((r) => r.id === aRow.id && Number(r.epoch) > Number(aRow.epoch)) ? true : undefined,
        "A re-registered with a new epoch",
        100,
      );
      expect(a.stderr()).toContain("INSTANCE LEASE LOST");
      await until(
        async () =>
          (
            await leadA
              .call("message_seat", { seat: "inbox", message: `through A again ${Date.now()}` })
              .catch(() => undefined)
          )?.structuredContent?.outcome === "delivered"
            ? true
            : undefined,
        "A delivering again",
        500,
      );
    }, 120_000);

    it("a call of a replica paused while it waited for the seat is refused before the send: nothing reaches the seat, and its lead hears uncertain", async () => {
      const before = await known();
      agent.freeze();
      const slow = leadB.call("message_seat", { seat: "inbox", message: "slow through B, A waits" });
      const slowId = await newestReceipt(before);
      await until(async () => ((await holder())?.endsWith(slowId) ? true : undefined), "B holding the seat", 20);
      const waiting = leadA.call("message_seat", { seat: "inbox", message: "through A, waiting when A paused" });
      const waitingId = await newestReceipt(new Set([...before, slowId]));
      process.kill(a.pid, "SIGSTOP");
      await sleep(SLOW_MS);
      agent.thaw();
      expect((await slow).structuredContent).toMatchObject({ outcome: "delivered" });
      await until(
        async () => (await receipt(waitingId))?.call_state === "uncertain" || undefined,
        "B taking over A's waiting call",
        300,
      );
      process.kill(a.pid, "SIGCONT");
      const answer = await waiting;
      expect(answer.structuredContent).toMatchObject({ outcome: "uncertain", deliveryId: waitingId });
      await sleep(2_000);
      expect(mailbox.list("inbox").entries.map((e) => e.text)).not.toContain("through A, waiting when A paused");
      expect(await receipt(waitingId)).toMatchObject({ state: "uncertain", call_state: "uncertain" });
    }, 120_000);
  },
);
