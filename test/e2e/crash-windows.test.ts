/**
 * Crash windows with real processes (scenarios 2 and 3): `clankie up` is SIGKILLed right
 * after the receipt commit, and right after the agent's write but before the settle. At
 * the next start nothing is replayed, and reconcile_seat_call reports what the receipt and
 * the seat's session prove. CLANKIE_FAULT parks the pipeline at the window so the kill
 * lands there deterministically.
 */
import { afterEach, describe, expect, it } from "vitest";
import { prepareStore } from "../kit/test-db.js";
import { runCli, startUp, type UpProcess } from "../kit/cli.js";
import { connectLead } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { readToken } from "../../controller/state-dir.js";
import { randomUUID } from "node:crypto";
import postgres from "postgres";
import { startPgWireRelay } from "../fixtures/pg-wire-relay.js";

const driver = process.env.DATABASE_URL ? "postgres" : "pglite";

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Seat leases still held by the controller that admitted `deliveryId`. */
async function leasesOfAdmitter(url: string, deliveryId: string): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<
      { holder: string }[]
    >`select holder from seat_turns where split_part(holder, ':', 1) = (select controller_instance from operator_call_receipts where id = ${deliveryId})`;
    return rows.map((r) => r.holder);
  } finally {
    await sql.end();
  }
}

describe(`crash windows (real processes, ${driver})`, () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });

  async function crashAt(fault: "hang_after_admit" | "hang_after_agent_reply", text: string) {
    const store = await prepareStore(driver);
    cleanups.push(store.cleanup);
    const env = { DATABASE_URL: store.databaseUrl ?? "" };
    const args = ["--state-dir", store.stateDir, "--port", "0", "--machine", "crashbox"];
    const first = await startUp(args, { ...env, CLANKIE_FAULT: fault });
    cleanups.push(() => first.stop());
    expect((await runCli(["seat", "add", "mailbox", "inbox", "--state-dir", store.stateDir], env)).code).toBe(0);
    const lead = await connectLead(first.ready.mcpUrl, first.ready.token);
    const lost = lead.call("message_seat", { seat: "inbox", message: text }).catch((e: Error) => e);
    const owner = ownerOf(first.ready.statusUrl, readToken(store.stateDir, "owner")!);
    const read = async () =>
      JSON.parse(
        (await runCli(["mailbox", "read", "inbox", "--peek", "--json", "--state-dir", store.stateDir], env)).stdout,
      ).messages as { deliveryId: string; text: string }[];
    const id = await until(
      "the receipt",
      async () => (await owner.receipts()).find((r) => r.state === "dispatching")?.deliveryId,
    );
    if (fault === "hang_after_agent_reply")
      await until("the agent's write", async () =>
        (await read()).some((m) => m.deliveryId === id) ? true : undefined,
      );
    first.child.kill("SIGKILL");
    // The answer is a JSON body, not an SSE stream: the connection's end rejects the pending call itself.
    expect(await lost).toBeInstanceOf(Error);
    await lead.close().catch(() => {});

    const second: UpProcess = await startUp(args, env);
    cleanups.push(() => second.stop());
    const lead2 = await connectLead(second.ready.mcpUrl, second.ready.token);
    cleanups.push(() => lead2.close());
    // The restarted controller takes over the dead one's call and frees its seat lease once the dead
    // one's instance lease has expired (ADR 0036: 10-12 s after its last renewal, never by its pid).
    // PostgreSQL: read it here; the embedded database frees it at boot (one process opens it).
    const leases = store.databaseUrl
      ? await until("the takeover of the dead controller's seat lease", async () =>
          (await leasesOfAdmitter(store.databaseUrl!, id)).length ? undefined : [],
        )
      : undefined;
    await new Promise((r) => setTimeout(r, 1000));
    return {
      id,
      lead: lead2,
      read,
      leases,
      owner: ownerOf(second.ready.statusUrl, readToken(store.stateDir, "owner")!),
    };
  }

  it("a lead's call in flight when the controller dies ends then, as a transport error, not at the client's request timeout", async () => {
    const store = await prepareStore(driver);
    cleanups.push(store.cleanup);
    const env = { DATABASE_URL: store.databaseUrl ?? "" };
    const up = await startUp(["--state-dir", store.stateDir, "--port", "0", "--machine", "crashbox"], {
      ...env,
      CLANKIE_FAULT: "hang_after_admit",
    });
    cleanups.push(() => up.stop());
    expect((await runCli(["seat", "add", "mailbox", "inbox", "--state-dir", store.stateDir], env)).code).toBe(0);
    const lead = await connectLead(up.ready.mcpUrl, up.ready.token);
    cleanups.push(() => lead.close());
    // The SDK client waits out its timeout for a POST whose SSE answer stream ends without a
    // result; an answer sent as one JSON body has no stream to wait on.
    const fate = lead.client
      .callTool({ name: "message_seat", arguments: { seat: "inbox", message: "in flight at the crash" } }, undefined, {
        timeout: 60_000,
      })
      .then(
        () => "answered",
        (e: Error) => e,
      );
    const owner = ownerOf(up.ready.statusUrl, readToken(store.stateDir, "owner")!);
    await until("the receipt", async () => (await owner.receipts()).find((r) => r.state === "dispatching")?.deliveryId);
    up.child.kill("SIGKILL");
    const stillPending = "still pending 20 s after the controller died";
    const ended = await Promise.race([fate, new Promise<string>((r) => setTimeout(() => r(stillPending), 20_000))]);
    expect(ended).toBeInstanceOf(Error);
    expect((ended as Error).message).not.toMatch(/timed out/i);
  });

  it(
    "killed after the receipt commit and before the agent call: never replayed at boot; reconcile proves it " +
      "absent from the mailbox and settles it not sent, with the proof (issue 32 item 6)",
    async () => {
      const { id, lead, read, owner, leases } = await crashAt("hang_after_admit", "written but never sent");
      // The killed controller held the seat's lease: the restarted one freed it once its instance lease expired, so no message waits 25 s for it.
      if (leases) expect(leases).toEqual([]);
      expect((await read()).filter((m) => m.deliveryId === id)).toHaveLength(0);
      expect((await owner.receipts()).find((r) => r.deliveryId === id)?.state).toBe("uncertain");
      // Until reconciled, the unresolved original fences its text.
      expect(
        (await lead.call("message_seat", { seat: "inbox", message: "written but never sent" })).structuredContent,
      ).toMatchObject({ reason: "fenced_by_unresolved_original", originalDeliveryId: id });
      const rec = await lead.call("reconcile_seat_call", { deliveryId: id });
      expect(rec.structuredContent, JSON.stringify(rec.structuredContent)).toMatchObject({
        outcome: "undelivered",
        state: "not_sent",
        reason: "proven_absent",
        deliveryId: id,
        proof: {
          checked: "mailbox_file",
          machine: "crashbox",
          path: expect.stringContaining(`${id}.json`),
          fileExists: false,
          writeInProgress: false,
          fencedAtUnixMs: expect.any(Number),
          dispatcher: { controllerInstance: expect.any(String), state: "stopped" },
        },
      });
      expect((await owner.receipts()).find((r) => r.deliveryId === id)?.state).toBe("not_sent");
      // Settled: reconcile answers the same again, and a settle finds nothing left to settle.
      const again = await lead.call("reconcile_seat_call", { deliveryId: id });
      expect(again.structuredContent).toMatchObject({ state: "not_sent", deliveryId: id });
      const settle = await lead.call("reconcile_seat_call", { deliveryId: id, settle: "not_delivered" });
      expect(settle.structuredContent).toMatchObject({ reason: "already_settled" });
      expect((await read()).filter((m) => m.text === "written but never sent")).toHaveLength(0);
    },
  );

  it("killed after the agent's write and before the settle: the session proves delivery, exactly one copy, never resent", async () => {
    const { id, lead, read, owner } = await crashAt("hang_after_agent_reply", "written and delivered");
    expect((await read()).filter((m) => m.deliveryId === id)).toHaveLength(1);
    const rec = await lead.call("reconcile_seat_call", { deliveryId: id });
    expect(rec.structuredContent).toMatchObject({
      outcome: "delivered",
      deliveryId: id,
      detail: expect.stringContaining("session"),
    });
    expect((await owner.receipts()).find((r) => r.deliveryId === id)?.state).toBe("delivered");
    const again = await lead.call(
      "message_seat",
      { seat: "inbox", message: "written and delivered" },
      { "clankie/seat-call": { deliveryId: id } },
    );
    expect(again.structuredContent).toMatchObject({ outcome: "delivered", deliveryId: id });
    expect((await read()).filter((m) => m.deliveryId === id)).toHaveLength(1);
  });

  it.runIf(driver === "postgres")(
    "killed after answering a definite not-sent the journal could not record: the next boot records it, and the id answers the same, never uncertain",
    async () => {
      const store = await prepareStore("postgres");
      cleanups.push(store.cleanup);
      const target = new URL(store.databaseUrl!);
      const relay = await startPgWireRelay(target.hostname, Number(target.port || 5432));
      cleanups.push(() => relay.close());
      const env = { DATABASE_URL: relay.urlFor(store.databaseUrl!) };
      const args = ["--state-dir", store.stateDir, "--port", "0", "--machine", "crashbox"];
      const first = await startUp(args, env);
      cleanups.push(() => first.stop());
      expect((await runCli(["seat", "add", "mailbox", "inbox", "--state-dir", store.stateDir], env)).code).toBe(0);
      const lead = await connectLead(first.ready.mcpUrl, first.ready.token);
      // The seat is busy at admission, so the turn is polled for after the receipt committed; the journal goes away at that poll.
      const direct = postgres(store.databaseUrl!, { max: 1, onnotice: () => {} });
      cleanups.push(() => direct.end());
      await direct`insert into seat_turns (seat_id, holder, expires_at) values ('crashbox/inbox', 'another-controller:x', now() + interval '3 seconds')`;
      const wentDown = relay.downWhenClientSends("clankie:poll_turn");
      const id = randomUUID();
      const text = "decided while the journal was away";
      const res = await lead.call(
        "message_seat",
        { seat: "inbox", message: text },
        { "clankie/seat-call": { deliveryId: id } },
      );
      await wentDown;
      expect(res.structuredContent).toMatchObject({
        outcome: "undelivered",
        reason: "journal_unavailable",
        deliveryId: id,
      });
      first.child.kill("SIGKILL");
      await lead.close().catch(() => {});
      relay.up();

      const second = await startUp(args, env);
      cleanups.push(() => second.stop());
      const lead2 = await connectLead(second.ready.mcpUrl, second.ready.token);
      cleanups.push(() => lead2.close());
      const [receipt] = await direct<
        { state: string; reason: string }[]
      >`select state, reason from delivery_receipts where id = ${id}`;
      expect(receipt).toEqual({ state: "not_sent", reason: "journal_unavailable" });
      const again = await lead2.call(
        "message_seat",
        { seat: "inbox", message: text },
        { "clankie/seat-call": { deliveryId: id } },
      );
      expect(again.structuredContent).toMatchObject({
        outcome: "undelivered",
        reason: "journal_unavailable",
        deliveryId: id,
      });
      const read = JSON.parse(
        (await runCli(["mailbox", "read", "inbox", "--peek", "--json", "--state-dir", store.stateDir], env)).stdout,
      ).messages as { deliveryId: string }[];
      expect(read.filter((m) => m.deliveryId === id)).toHaveLength(0);
      // Two `clankie up` starts on a fresh PostgreSQL: slow on a loaded box, bounded here.
    },
    180_000,
  );
});
