/**
 * A controller that dies while its PostgreSQL holds a hire's admission it had refused (ADR 0033):
 * the lead was told journal_unavailable, "nothing was launched, and nothing will be for this id".
 * The admission's transaction had run its statements and was held at its `commit`; then the
 * process was killed. Either the server still commits it (it had the commit in its socket) or it
 * rolls it back (it saw the client gone first). Either way the next boot on the same state
 * directory keeps the lead's answer (recovery never turns a decided, answered outcome into a
 * different one): the call is settled failed journal_unavailable, a committed reservation is
 * failed and never launched, and a replay or a reconcile of the id says so. Before, the committed
 * reservation's call came back uncertain, and the rolled-back one was hired anew on replay. Real
 * controller and agent processes, a real PostgreSQL behind a relay that holds the dead process's
 * bytes (test/fixtures/pg-wire-relay.ts).
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterEach, describe, expect, it } from "vitest";
import { startControllerProcess } from "../kit/controller-process.js";
import { connectLead } from "../kit/mcp-client.js";
import { available } from "../kit/requirements.js";
import { killFirst, startRelayedController } from "../kit/relayed-controller.js";
import { until } from "../kit/until.js";

const META = "clankie/seat-call";

describe.runIf(available("postgres"))("a controller dying while its database holds a refused hire", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });

  for (const held of ["commits", "rolls back"] as const) {
    it(`ADR 0033: the held hire admission ${held} after the controller died; the next boot keeps the refusal, and nothing is launched`, async () => {
      const c = await startRelayedController("hire", cleanups);
      const { relay, stateDir, lead, agentDir } = c;
      expect((await lead.call("list_seats", {})).isError).toBeFalsy();

      const id = randomUUID();
      const args = {
        harness: "codex",
        machine: "hirebox",
        workingDirectory: mkdtempSync(join(tmpdir(), "clankie-crash-hire-")),
        title: "worker",
        role: "tester",
        brief: "never sent",
      };
      // Held at the admission's commit: its call receipt and reservation are written, not yet committed.
      const frozen = relay.freezeWhenClientSends("commit", {
        after: 'insert into "hire_receipts"',
        deliverAfterClientCloses: held === "commits",
      });
      const refused = await lead.call("hire_agent", args, { [META]: { hireId: id } }).catch((e: Error) => e);
      await frozen;
      const answer =
        refused instanceof Error ? refused.message : JSON.stringify(refused.structuredContent ?? refused.content);
      expect(answer).toMatch(/journal_unavailable.*nothing was launched, and nothing will be for this id/);
      // The refusal is on disk before the lead heard it.
      const spill = join(stateDir, "unrecorded-outcomes.json");
      expect(existsSync(spill)).toBe(true);
      expect(readFileSync(spill, "utf8")).toContain(id);

      await killFirst(c);
      relay.thaw();
      await until(() => relay.openSockets() === 0, "the held admission run or dropped, and its connection closed", 200);
      const sql = postgres(c.databaseUrl, { max: 1, onnotice: () => {} });
      cleanups.push(() => sql.end());
      if (held === "commits") {
        // Committed under the dead controller: a reservation whose call is still in flight.
        expect((await sql`select state from hire_receipts where id = ${id}`)[0]?.state).toBe("reserved");
        expect((await sql`select state from operator_call_receipts where id = ${id}`)[0]?.state).toBe("in_flight");
      } else {
        expect(await sql`select id from operator_call_receipts where id = ${id}`).toEqual([]);
      }

      const second = await startControllerProcess(stateDir, c.databaseUrl);
      cleanups.push(() => second.stop());
      const [call] = await sql`select state, result from operator_call_receipts where id = ${id}`;
      expect(call?.state).toBe("settled");
      expect(call?.result).toMatchObject({
        outcome: "failed",
        reason: "journal_unavailable",
        hireId: id,
        launchCommitted: false,
      });
      const hires = await sql`select state, reason, settled_at from hire_receipts where id = ${id}`;
      if (held === "commits") expect(hires).toMatchObject([{ state: "failed", reason: "journal_unavailable" }]);
      else expect(hires).toEqual([]);
      expect(existsSync(spill)).toBe(false);

      // The lead's replay and reconcile of the id hear the same refusal, never uncertain, and nothing reaches the agent.
      const again = await connectLead(second.mcpUrl, second.leadToken);
      cleanups.push(() => again.close());
      const replay = await again.call("hire_agent", args, { [META]: { hireId: id } });
      expect(replay.structuredContent).toMatchObject({
        outcome: "failed",
        reason: "journal_unavailable",
        hireId: id,
        launchCommitted: false,
      });
      const reconciled = await again.call("reconcile_seat_call", { hireId: id });
      expect(reconciled.structuredContent).toMatchObject({
        outcome: "failed",
        reason: "journal_unavailable",
        hireId: id,
      });
      expect(existsSync(join(agentDir, "agent", "hires", `${id}.json`))).toBe(false);
    }, 120_000);
  }
});
