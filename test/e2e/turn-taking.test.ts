/**
 * One delivery per seat at a time (rule 25), across controller processes: two real
 * `clankie controller` processes on one PostgreSQL share a seat, and the database lease
 * makes the second wait for the first. The lease itself (the controller's take, through the
 * stand-in of test/kit/seat-lease.ts) is also exercised on each driver: held, it makes a taker
 * wait; expired, it is taken.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import postgres from "postgres";
import { DRIVERS, POSTGRES_ONCE, prepareStore } from "../kit/test-db.js";
import { CLI } from "../kit/cli.js";
import { startAgentProcess, type AgentProcess } from "../kit/agent-process.js";
import { connectLead } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { readToken } from "../../controller/state-dir.js";
import { openDatabase } from "../../controller/db/open.js";
import { takeSeatLease } from "../kit/seat-lease.js";

async function startControllerProcess(
  stateDir: string,
  databaseUrl: string,
): Promise<{ child: ChildProcess; url: string; mcpUrl: string; agentUrl: string }> {
  const child = spawn(
    process.execPath,
    [
      CLI,
      "controller",
      "--json",
      "--port",
      "0",
      "--state-dir",
      stateDir,
      "--deliver-timeout-ms",
      "3000",
      "--log-level",
      "error",
    ],
    {
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", resolve);
    child.once("exit", (code) => reject(new Error(`controller exited with ${code}`)));
  });
  const { url, mcpUrl, agentUrl } = JSON.parse(line) as { url: string; mcpUrl: string; agentUrl: string };
  return { child, url, mcpUrl, agentUrl };
}

describe.each(DRIVERS)("seat lease on %s", (driver) => {
  it("a held seat makes the next taker wait and then give up; an expired lease is taken over", async () => {
    const store = await prepareStore(driver);
    const db = await openDatabase(
      store.databaseUrl ? { url: store.databaseUrl } : { dataDir: `${store.stateDir}/pgdata` },
    );
    try {
      const first = await takeSeatLease(db.db, "m/s", "first", 60_000, 0);
      expect(first).toBeDefined();
      expect(await takeSeatLease(db.db, "m/s", "second", 60_000, 200)).toBeUndefined();
      await first!.release();
      const second = await takeSeatLease(db.db, "m/s", "second", 1, 0);
      expect(second).toBeDefined();
      await new Promise((r) => setTimeout(r, 1100));
      expect(await takeSeatLease(db.db, "m/s", "third", 60_000, 0)).toBeDefined();
    } finally {
      await db.close();
      await store.cleanup();
    }
  });
});

describe.each(POSTGRES_ONCE)("two controller processes on one %s", () => {
  const stops: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const s of stops.reverse()) await s().catch(() => {});
  });

  it("take turns on one seat: the second controller's message waits for the first's to settle", async () => {
    const store = await prepareStore("postgres");
    stops.push(store.cleanup);
    const a = await startControllerProcess(store.stateDir, store.databaseUrl!);
    stops.push(async () => a.child.kill("SIGTERM"));
    const b = await startControllerProcess(store.stateDir, store.databaseUrl!);
    stops.push(async () => b.child.kill("SIGTERM"));
    // The agent dials a; the replica list in a's answers makes it link to b as well (ADR 0021).
    const joinToken = await ownerOf(a.url, readToken(store.stateDir, "owner")!).enroll("shared");
    const agent: AgentProcess = await startAgentProcess({
      controllerUrl: a.agentUrl,
      stateDir: store.stateDir,
      machine: "shared",
      joinToken,
    });
    stops.push(() => agent.stop());
    const owner = ownerOf(a.url, readToken(store.stateDir, "owner")!);
    for (let i = 0; i < 100 && !(await owner.status.listMachines({})).machines.some((m) => m.online); i++)
      await new Promise((r) => setTimeout(r, 50));
    await owner.addMailbox("inbox");
    const token = readToken(store.stateDir, "lead")!;
    const leadA = await connectLead(a.mcpUrl, token);
    const leadB = await connectLead(b.mcpUrl, token);
    stops.push(
      () => leadA.close(),
      () => leadB.close(),
    );
    const sql = postgres(store.databaseUrl!, { max: 1, onnotice: () => {} });
    stops.push(() => sql.end());
    const holder = async () =>
      (await sql<{ holder: string }[]>`select holder from seat_turns where seat_id = 'shared/inbox'`)[0]?.holder;
    const dispatching = async () =>
      (
        await sql<{ id: string }[]>`select id from delivery_receipts where state = 'dispatching' order by created_at`
      ).map((r) => r.id);

    agent.freeze();
    const first = leadA.call("message_seat", { seat: "inbox", message: "first, through controller A" });
    let firstId: string | undefined;
    for (let i = 0; i < 100 && !firstId; i++) {
      const h = await holder();
      firstId = h?.split(":")[1];
      if (!firstId) await new Promise((r) => setTimeout(r, 20));
    }
    expect(firstId).toBeDefined();
    const second = leadB.call("message_seat", { seat: "inbox", message: "second, through controller B" });
    let secondId: string | undefined;
    for (let i = 0; i < 100 && !secondId; i++) {
      secondId = (await dispatching()).find((id) => id !== firstId);
      if (!secondId) await new Promise((r) => setTimeout(r, 20));
    }
    // B's message is admitted but waits: the seat is still A's.
    expect(secondId).toBeDefined();
    expect((await holder())?.split(":")[1]).toBe(firstId);
    const firstResult = await first;
    expect(firstResult.structuredContent).toMatchObject({ outcome: "uncertain", deliveryId: firstId });
    let nextHolder: string | undefined;
    for (let i = 0; i < 200 && nextHolder !== secondId; i++) {
      nextHolder = (await holder())?.split(":")[1];
      if (nextHolder !== secondId) await new Promise((r) => setTimeout(r, 10));
    }
    expect(nextHolder).toBe(secondId);
    agent.thaw();
    const secondResult = await second;
    expect(["delivered", "uncertain"]).toContain(secondResult.structuredContent!.outcome);
    expect(secondResult.structuredContent!.reason).not.toBe("seat_busy");
  });
});
