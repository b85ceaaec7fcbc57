/**
 * A controller that dies while its PostgreSQL holds an admission it had refused (ADR 0033):
 * the lead was told journal_unavailable, "nothing was dispatched, and nothing will be for this
 * id", and the admission commits later — before the next boot, or after it. Either way the next
 * boot on the same state directory keeps that answer (rule: recovery never turns a decided,
 * answered outcome into a different one): the call stays refused not sent, no receipt is left
 * dispatching or uncertain, no lease or fence holds the seat, and a replay of the id answers the
 * refusal. Before, recovery marked it uncertain (thawed before the boot) or the admission stayed
 * in flight under the dead controller (thawed after). Real controller and agent processes, a real
 * PostgreSQL behind a relay that holds the dead process's bytes and delivers them at thaw
 * (test/fixtures/pg-wire-relay.ts).
 */
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { afterEach, describe, expect, it } from "vitest";
import { startControllerProcess } from "../kit/controller-process.js";
import { connectLead } from "../kit/mcp-client.js";
import { available } from "../kit/requirements.js";
import { killFirst, startRelayedController } from "../kit/relayed-controller.js";
import { until } from "../kit/until.js";

const META = "clankie/seat-call";

describe.runIf(available("postgres"))("a controller dying while its database holds a refused admission", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });

  for (const thaw of ["before", "after"] as const) {
    it(`ADR 0033: the held admission commits ${thaw} the next boot; the refusal stands, and nothing is left in flight`, async () => {
      const c = await startRelayedController("crash", cleanups);
      const { relay, stateDir, lead } = c;
      // The held call must be one write (Bind, Execute, Sync) that a frozen server has whole: the
      // admission already prepared on its connection. Run first on a connection, it is described
      // first, and its Parse alone would leave the server timing it (the relay's onlyPrepared). A
      // call that lands on such a connection is delivered and prepares it; the next one is tried.
      let id = "";
      let text = "";
      let refused: Awaited<ReturnType<typeof lead.call>> | Error | undefined;
      for (let attempt = 0; refused === undefined; attempt++) {
        expect(attempt, "a call on a connection with the admission prepared").toBeLessThan(20);
        // A fresh token check, so the call reaches admission before the 2 s token cache runs out.
        expect((await lead.call("list_seats", {})).isError).toBeFalsy();
        let fired = false;
        void relay
          .freezeWhenClientSends("insert into operator_call_receipts", {
            deliverAfterClientCloses: true,
            onlyPrepared: true,
          })
          .then(() => (fired = true));
        id = randomUUID();
        text = `held, then the controller died (${attempt})`;
        const res = await lead
          .call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } })
          .catch((e: Error) => e);
        if (fired) refused = res;
        else expect(res instanceof Error ? res.message : res.structuredContent).toMatchObject({ outcome: "delivered" });
      }
      const answer =
        refused instanceof Error ? refused.message : JSON.stringify(refused.structuredContent ?? refused.content);
      expect(answer).toMatch(/journal_unavailable.*did not answer.*nothing will be for this id/);
      // The refusal is on disk before the lead heard it.
      const spill = join(stateDir, "unrecorded-outcomes.json");
      expect(existsSync(spill)).toBe(true);
      expect(readFileSync(spill, "utf8")).toContain(id);

      await killFirst(c);
      const held = () =>
        until(() => relay.openSockets() === 0, "the held admission run and its connection closed", 200);
      if (thaw === "before") {
        relay.thaw();
        await held();
        // The admission committed under the dead controller: its receipts and the seat's lease are there.
        const sql = postgres(c.databaseUrl, { max: 1, onnotice: () => {} });
        cleanups.push(() => sql.end());
        expect((await sql`select state from delivery_receipts where id = ${id}`)[0]?.state).toBe("dispatching");
      }
      // The next boot talks to the database directly; the dead process's bytes stay in the relay.
      const second = await startControllerProcess(stateDir, c.databaseUrl);
      cleanups.push(() => second.stop());
      if (thaw === "after") {
        relay.thaw();
        await held();
      }

      const sql = postgres(c.databaseUrl, { max: 1, onnotice: () => {} });
      cleanups.push(() => sql.end());
      const [call] = await sql`select state, result from operator_call_receipts where id = ${id}`;
      expect(call?.state).toBe("settled");
      expect(call?.result).toMatchObject({ outcome: "undelivered", reason: "journal_unavailable", deliveryId: id });
      const receipts = await sql`select state, reason from delivery_receipts where id = ${id}`;
      if (thaw === "before") expect(receipts).toEqual([{ state: "not_sent", reason: "journal_unavailable" }]);
      else expect(receipts).toEqual([]);
      expect(await sql`select holder from seat_turns where holder like ${`%${id}`}`).toEqual([]);
      expect(await sql`select delivery_id from fences where delivery_id = ${id}`).toEqual([]);
      expect(existsSync(spill)).toBe(false);

      // The lead's replay of the id hears the same refusal, never uncertain.
      const again = await connectLead(second.mcpUrl, second.leadToken);
      cleanups.push(() => again.close());
      const replay = await again.call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } });
      expect(replay.structuredContent).toMatchObject({
        outcome: "undelivered",
        reason: "journal_unavailable",
        deliveryId: id,
      });
    }, 120_000);
  }
});
