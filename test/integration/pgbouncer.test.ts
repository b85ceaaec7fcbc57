/**
 * Issue 34 item 5: the journal behind pgbouncer, in transaction mode and in session mode
 * (`pool_mode=…` in DATABASE_URL, controller/db/pooled-client.ts). Before, pgbouncer refused the
 * controller's first connection in either mode ("unsupported startup parameter:
 * statement_timeout"), and transaction mode would have broken named prepared statements and
 * the session-level migration lock. A real pgbouncer (test/kit/pgbouncer.ts) with 4 server
 * connections, two controllers starting at once on a fresh database through it, a real agent
 * and a stream of message_seat calls; and the timeouts shown in force on pooled connections.
 */
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { timeoutsPerTransaction } from "../../controller/db/pooled-client.js";
import { startAgentProcess } from "../kit/agent-process.js";
import { startControllerProcess } from "../kit/controller-process.js";
import { connectLead } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { startPgbouncer } from "../kit/pgbouncer.js";
import { available } from "../kit/requirements.js";
import { freshPostgres, tempDir } from "../kit/test-db.js";
import { until } from "../kit/until.js";

const serverOf = () => {
  const u = new URL(process.env.DATABASE_URL!);
  return { host: u.hostname, port: Number(u.port || 5432) };
};

describe.runIf(available("postgres") && available("pgbouncer"))("issue 34 item 5: the journal behind pgbouncer", () => {
  const cleanups: (() => unknown)[] = [];
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => {});
  });

  for (const mode of ["transaction", "session"] as const) {
    it(`${mode} mode: two controllers migrate at once through it, and a stream of message_seat calls is delivered, each once`, async () => {
      const pg = await freshPostgres();
      cleanups.push(() => pg.drop());
      // Session mode pins a server connection to each client connection for its life: a replica
      // holds up to 20 (16 writes, 4 reads), so pgbouncer's pool must have room for all of them.
      const bouncer = await startPgbouncer(mode, serverOf(), mode === "session" ? 50 : 4);
      cleanups.push(() => bouncer.stop());
      const url = bouncer.urlFor(pg.url);
      // Both start on the fresh database: the migration lock (transaction-level here) lets one
      // migrate while the other waits, then finds the migrations applied.
      const [first, second] = await Promise.all([
        startControllerProcess(tempDir(`pgb-${mode}-a`), url),
        startControllerProcess(tempDir(`pgb-${mode}-b`), url),
      ]).catch((e: Error) => {
        throw new Error(`${e.message}\npgbouncer log:\n${bouncer.log().slice(-2000)}`);
      });
      cleanups.push(
        () => first!.stop(),
        () => second!.stop(),
      );
      // The kit takes the first line for the ready record: a start that failed printed its error there.
      for (const c of [first!, second!])
        expect(c.url, `a controller through pgbouncer did not start:\n${bouncer.log().slice(-2000)}`).toBeTruthy();
      const controller = first!;
      const owner = ownerOf(controller.url, controller.ownerToken);
      const agentDir = tempDir(`pgb-${mode}-agent`);
      const agent = await startAgentProcess({
        controllerUrl: controller.agentUrl,
        stateDir: agentDir,
        machine: "pooledbox",
        joinToken: await owner.enroll("pooledbox"),
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
      // Each replica issues its own state dir's lead token at boot: the later one's is the journal's.
      const leadToken = await connectLead(controller.mcpUrl, controller.leadToken).then(
        async (l) => (await l.close(), controller.leadToken),
        () => second!.leadToken,
      );
      const lead = await connectLead(controller.mcpUrl, leadToken);
      cleanups.push(() => lead.close());

      // Four at a time, so the controller's pool holds more client connections than pgbouncer has servers.
      const texts = Array.from({ length: 24 }, (_, i) => `through pgbouncer (${mode}) ${i}`);
      const outcomes: string[] = [];
      for (let i = 0; i < texts.length; i += 4) {
        const batch = await Promise.all(
          texts.slice(i, i + 4).map((message) => lead.call("message_seat", { seat: "inbox", message })),
        );
        outcomes.push(...batch.map((r) => String(r.structuredContent?.outcome ?? JSON.stringify(r.content))));
      }
      expect(outcomes).toEqual(texts.map(() => "delivered"));
      const entries = new MailboxStore(join(agentDir, "agent", "mailboxes"))
        .list("inbox")
        .entries.map((e) => e.text)
        .sort();
      expect(entries).toEqual([...texts].sort());
      // The second replica serves the same lead (its token is the journal's) through the pooler.
      const other = await connectLead(second!.mcpUrl, leadToken);
      cleanups.push(() => other.close());
      expect((await other.call("list_seats", {})).isError).toBeFalsy();
    }, 180_000);
  }

  it("transaction mode: every pooled statement carries the journal's timeouts, set per transaction (a long statement is ended by statement_timeout)", async () => {
    const pg = await freshPostgres();
    cleanups.push(() => pg.drop());
    const bouncer = await startPgbouncer("transaction", serverOf(), 2);
    cleanups.push(() => bouncer.stop());
    const raw = postgres(bouncer.urlFor(pg.url).replace(/[?&]pool_mode=transaction/, ""), {
      max: 6,
      prepare: false,
      onnotice: () => {},
    });
    cleanups.push(() => raw.end({ timeout: 1 }));
    const sql = timeoutsPerTransaction(raw, {
      lockTimeoutMs: 700,
      statementTimeoutMs: 900,
      idleInTransactionMs: 3_000,
    });
    // More client connections than the 2 servers; each statement reports the settings it ran under.
    const seen = await Promise.all(
      Array.from({ length: 12 }, () =>
        sql.unsafe(
          "select current_setting('lock_timeout') as l, current_setting('statement_timeout') as s, current_setting('idle_in_transaction_session_timeout') as i",
        ),
      ),
    );
    expect(new Set(seen.map((r) => JSON.stringify(r[0])))).toEqual(
      new Set([JSON.stringify({ l: "700ms", s: "900ms", i: "3s" })]),
    );
    // drizzle's transactions get them too, and `.values()` still works.
    expect(
      await sql.begin(async (t) => (await t.unsafe("select current_setting('statement_timeout') as s"))[0]!.s),
    ).toBe("900ms");
    expect(await sql.unsafe("select 1 as one").values()).toEqual([[1]]);
    await expect(sql.unsafe("select pg_sleep(3)")).rejects.toMatchObject({ code: "57014" });
    // Nothing leaked into the server sessions: a statement outside the wrapper runs unbounded.
    expect((await raw.unsafe("select current_setting('statement_timeout') as s"))[0]!.s).toBe("0");
  }, 60_000);
});
