/**
 * Inventory scenario 25 and rule 17 across CONTROLLER restarts: one notice per unresolved
 * receipt; once acknowledged it is remembered by the journal, not by a process; one that never
 * reached the seat is tried once more by the next controller process and never again. The
 * controller is stopped and started again on the same port, state dir and database; the node
 * agent is a real child process. A notice "never reaches the seat" because the recipient's
 * mailbox directory is replaced by a plain file, so the agent's write fails for real.
 * The journal's attempt counter is read to tell a repeated send from the mailbox's own
 * de-duplication of the notice id.
 *
 * Rule 17 with two controller replicas on one PostgreSQL: both hold a reverse link to the one
 * node agent, and both sweep the pending notices when the agent comes back (registration on
 * one, the link on each) while the seat's turn is held, so both read the same pending notices
 * and queue for the same turn: they race for the same unresolved receipt. The attempt is claimed
 * atomically in the journal: the notice reaches the seat once, and the journal's attempt
 * counter (the mailbox de-duplicates the notice id, so it alone cannot tell) shows that only
 * one replica sent it. PostgreSQL only: the embedded PGlite serves one process.
 */
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileControllerConfig } from "../../../controller/config.js";
import { startController, type RunningController } from "../../../controller/main.js";
import { controllerInstances, fences } from "../../../controller/db/schema.js";
import { silentLogger } from "../../../shared/logger.js";
import { MailboxStore } from "../../../node-agent/mailbox/store.js";
import { DRIVERS, POSTGRES_ONCE, prepareStore } from "../../kit/test-db.js";
import { startAgentProcess, type AgentProcess } from "../../kit/agent-process.js";
import { connectLead, type LeadClient } from "../../kit/mcp-client.js";
import { ownerOf } from "../../kit/owner.js";

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe.each(DRIVERS)("scenario 25 / rule 17: notices across controller restarts on %s", (driver) => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let port: number;
  let agentPort: number;
  let controller: RunningController;
  let agent: AgentProcess;
  let lead: LeadClient;
  let mailbox: MailboxStore;

  const start = async () => {
    controller = await startController(
      compileControllerConfig({
        stateDir: store.stateDir,
        port,
        agentPort,
        databaseUrl: store.databaseUrl,
        heartbeatIntervalMs: 500,
        deliverTimeoutMs: 1500,
      }),
      silentLogger,
    );
    lead = await connectLead(controller.mcpUrl, controller.leadToken);
  };
  const restartController = async () => {
    await lead.close().catch(() => {});
    await controller.close();
    await start();
  };
  const waitOnline = async () => {
    const owner = ownerOf(controller.url, controller.ownerToken);
    for (let i = 0; i < 200; i++) {
      const m = (await owner.status.listMachines({})).machines.find((x) => x.name === "box");
      if (m?.online && Number(m.lastSeenAgeMs) < 400) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("the agent did not come online");
  };
  /** A fresh agent process registers, and registration is when pending notices are swept. */
  const restartAgent = async () => {
    await agent.restart();
    await waitOnline();
    await new Promise((r) => setTimeout(r, 700));
  };
  /** Under load the freshness gate may refuse a send (`proof_stale`, definite not-sent): a new call, not a resend. */
  const sendDelivered = async (message: string) => {
    let res = await lead.call("message_seat", { seat: "inbox", message });
    for (let i = 0; i < 20 && res.structuredContent?.reason === "proof_stale"; i++) {
      await new Promise((r) => setTimeout(r, 250));
      res = await lead.call("message_seat", { seat: "inbox", message });
    }
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "delivered" });
  };
  const fence = async (id: string) =>
    (await controller.database.db.select().from(fences).where(eq(fences.deliveryId, id)))[0]!;
  const notices = (id: string) =>
    mailbox.list("inbox").entries.filter((e) => e.conversationId === "clankie-notice" && e.inReplyTo === id);

  async function lostOriginal(text: string, beforeAgentRestart?: () => void): Promise<string> {
    agent.freeze();
    const res = await lead.call("message_seat", { seat: "inbox", message: text });
    expect(res.structuredContent).toMatchObject({ outcome: "uncertain" });
    beforeAgentRestart?.();
    await restartAgent();
    return res.structuredContent!.deliveryId as string;
  }

  beforeAll(async () => {
    store = await prepareStore(driver);
    port = await freePort();
    // Fixed across restarts like the main port: the agent redials the same agent URL.
    agentPort = await freePort();
    await start();
    agent = await startAgentProcess({
      controllerUrl: controller.agentUrl,
      stateDir: store.stateDir,
      machine: "box",
      joinToken: await controller.issueJoinToken("box"),
    });
    await waitOnline();
    await ownerOf(controller.url, controller.ownerToken).addMailbox("inbox");
    mailbox = new MailboxStore(join(store.stateDir, "agent", "mailboxes"));
  });
  afterAll(async () => {
    await lead?.close().catch(() => {});
    await agent?.stop().catch(() => {});
    await controller?.close();
    await store?.cleanup();
  });

  it("scenario 25: an acknowledged notice is not repeated after the controller restarts", async () => {
    const original = await lostOriginal("scenario 25 original");
    for (let i = 0; i < 200 && notices(original).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(notices(original)).toHaveLength(1);
    expect(await fence(original)).toMatchObject({ noticeAttempts: 1, noticeAcknowledgedAt: expect.any(Date) });

    await restartController();
    await waitOnline();
    // Every trigger of a sweep in the new process: a registration and a delivery to the seat.
    await restartAgent();
    await sendDelivered("scenario 25 after the restart");
    await new Promise((r) => setTimeout(r, 700));
    expect(notices(original)).toHaveLength(1);
    expect((await fence(original)).noticeAttempts).toBe(1);
  });

  it("rule 17: a notice that never reached the seat is tried once by the next controller process, and never again", async () => {
    const dir = mailbox.dir("inbox");
    const aside = `${dir}.aside`;
    const breakMailbox = () => {
      renameSync(dir, aside);
      writeFileSync(dir, "not a directory");
    };
    const repairMailbox = () => {
      rmSync(dir, { force: true });
      renameSync(aside, dir);
    };
    const original = await lostOriginal("rule 17 original", breakMailbox);
    try {
      // This process tried once (at the agent's registration) and failed.
      expect(await fence(original)).toMatchObject({ noticeAttempts: 1, noticeAcknowledgedAt: null });
      // Another sweep in the same process does not try again.
      await restartAgent();
      expect((await fence(original)).noticeAttempts).toBe(1);

      // The next controller process tries once more (still failing).
      await restartController();
      await waitOnline();
      await restartAgent();
      expect(await fence(original)).toMatchObject({ noticeAttempts: 2, noticeAcknowledgedAt: null });
    } finally {
      repairMailbox();
    }
    // And never again, even once the seat could take it.
    await restartController();
    await waitOnline();
    await restartAgent();
    await sendDelivered("rule 17 after the last restart");
    await new Promise((r) => setTimeout(r, 700));
    expect((await fence(original)).noticeAttempts).toBe(2);
    expect(notices(original)).toHaveLength(0);
  });
});

describe.each(POSTGRES_ONCE)("rule 17: two controller replicas on one %s never both send a notice", () => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let a: RunningController;
  let b: RunningController;
  let agent: AgentProcess;
  let lead: LeadClient;
  let mailbox: MailboxStore;

  const config = () =>
    compileControllerConfig({
      stateDir: store.stateDir,
      port: 0,
      databaseUrl: store.databaseUrl,
      heartbeatIntervalMs: 500,
      deliverTimeoutMs: 1500,
    });
  const bothLinked = async () => {
    for (let i = 0; i < 200 && !(a.linked("box") && b.linked("box")); i++) await new Promise((r) => setTimeout(r, 50));
    if (!(a.linked("box") && b.linked("box"))) throw new Error("the agent did not link to both replicas");
  };
  const fence = async (id: string) => (await a.database.db.select().from(fences).where(eq(fences.deliveryId, id)))[0]!;
  /** Takes the seat's turn lease in the journal for `ms`, as another controller's delivery would. */
  const holdSeatTurn = async (ms: number) => {
    await a.database.db.execute(
      sql`insert into seat_turns (seat_id, holder, expires_at) values ('box/inbox', 'test:held-turn', now() + make_interval(secs => ${ms / 1000}::float8))
          on conflict (seat_id) do update set holder = excluded.holder, expires_at = excluded.expires_at`,
    );
  };
  const notices = (id: string) =>
    mailbox.list("inbox").entries.filter((e) => e.conversationId === "clankie-notice" && e.inReplyTo === id);

  beforeAll(async () => {
    store = await prepareStore("postgres");
    a = await startController(config(), silentLogger);
    b = await startController(config(), silentLogger);
    agent = await startAgentProcess({
      controllerUrl: a.agentUrl,
      stateDir: store.stateDir,
      machine: "box",
      joinToken: await a.issueJoinToken("box"),
    });
    await bothLinked();
    await ownerOf(a.url, a.ownerToken).addMailbox("inbox");
    mailbox = new MailboxStore(join(store.stateDir, "agent", "mailboxes"));
    lead = await connectLead(a.mcpUrl, a.leadToken);
  });
  afterAll(async () => {
    await lead?.close().catch(() => {});
    await agent?.stop().catch(() => {});
    await b?.close();
    await a?.close();
    await store?.cleanup();
  });

  it("rule 17: both replicas sweep as the agent returns; each unresolved receipt's notice is attempted once, by one replica, and arrives once", async () => {
    // Three lost originals raise the chance that the two sweeps overlap on one of them.
    agent.freeze();
    const originals: string[] = [];
    for (const text of ["rule 17 replicas one", "rule 17 replicas two", "rule 17 replicas three"]) {
      const res = await lead.call("message_seat", { seat: "inbox", message: text });
      expect(res.structuredContent).toMatchObject({ outcome: "uncertain" });
      originals.push(res.structuredContent!.deliveryId as string);
    }
    // The seat's turn is held (as a long delivery through a third process would hold it) while the
    // agent comes back, so both replicas' sweeps read the same pending notices and queue for the turn.
    await holdSeatTurn(4000);
    await agent.restart();
    await bothLinked();
    for (const id of originals) {
      for (let i = 0; i < 200 && notices(id).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    }
    // Both replicas have swept by now (each on its own link); give a late second attempt time to land.
    await new Promise((r) => setTimeout(r, 1500));
    const replicas = (await a.database.db.select({ id: controllerInstances.id }).from(controllerInstances)).map(
      (r) => r.id,
    );
    expect(replicas).toHaveLength(2);
    for (const id of originals) {
      expect(notices(id)).toHaveLength(1);
      const f = await fence(id);
      expect(f).toMatchObject({ noticeAttempts: 1, noticeAcknowledgedAt: expect.any(Date) });
      // Claimed in the journal by one of the two replicas.
      expect(replicas).toContain(f.noticeClaimedBy);
    }
    // A second round of triggers on both replicas (a new registration and links) sends nothing more.
    await agent.restart();
    await bothLinked();
    await new Promise((r) => setTimeout(r, 1500));
    for (const id of originals) {
      expect(notices(id)).toHaveLength(1);
      expect((await fence(id)).noticeAttempts).toBe(1);
    }
  });
});
