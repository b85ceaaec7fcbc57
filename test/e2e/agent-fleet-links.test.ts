/**
 * Issue 34 item 2 (ADR 0038): an agent speaks to the fleet, not to one replica. Three real
 * `clankie controller` replicas from dist/ on one PostgreSQL and a real `clankie agent` with a
 * mailbox seat that joined through replica A; A is killed with SIGKILL. The seat is never shown
 * offline on B or C, the agent's heartbeats go on through another replica, and a slow (2.5 s)
 * delivery in flight through C ends delivered, both when A dies mid-call and when A has been
 * dead for longer than the offline threshold. An agent given two --controller URLs, the first
 * dead, joins and registers through the second; a restart given only the dead URL comes back
 * through the replicas it learned and stored. A replica that hangs instead of dying is left
 * within about one heartbeat interval.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import postgres from "postgres";
import { POSTGRES_ONCE, prepareStore, tempDir } from "../kit/test-db.js";
import { CLI } from "../kit/cli.js";
import { startControllerProcess, type ControllerProcess } from "../kit/controller-process.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { until } from "../kit/until.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Agent {
  child: ChildProcess;
  stateDir: string;
  stderr(): string;
  stop(): Promise<void>;
}

/** `clankie agent` with the given --controller values; resolves once it is registered and linked. */
async function startAgent(o: {
  stateDir: string;
  machine: string;
  controllers: string[];
  joinToken?: string;
}): Promise<Agent> {
  const args = [CLI, "agent", "--json", "--state-dir", o.stateDir, "--machine", o.machine, "--log-level", "info"];
  for (const c of o.controllers) args.push("--controller", c);
  const child = spawn(process.execPath, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...(o.joinToken ? { CLANKIE_JOIN_TOKEN: o.joinToken } : {}) },
  });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`agent not ready in 30 s; stderr:\n${stderr}`)), 30_000);
    createInterface({ input: child.stdout! }).once("line", () => {
      clearTimeout(timer);
      resolve();
    });
    child.once("exit", (code) => reject(new Error(`agent exited with ${code}; stderr:\n${stderr}`)));
  });
  return {
    child,
    stateDir: o.stateDir,
    stderr: () => stderr,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGCONT");
        child.kill("SIGTERM");
      }),
  };
}

const storedUrls = (agentStateDir: string) =>
  (JSON.parse(readFileSync(join(agentStateDir, "identity", "identity.json"), "utf8")) as { controllerUrls: string[] })
    .controllerUrls;

describe.each(POSTGRES_ONCE)("issue 34 item 2 on %s: an agent speaks to the fleet, not to one replica", () => {
  const stops: (() => Promise<unknown>)[] = [];
  let a: ControllerProcess, b: ControllerProcess, c: ControllerProcess;
  let agent: Agent;
  let leadB: LeadClient, leadC: LeadClient;
  let sql: postgres.Sql;
  let stateDir: string;

  beforeAll(async () => {
    const store = await prepareStore("postgres");
    stops.push(store.cleanup);
    stateDir = store.stateDir;
    // One state directory: the replicas share the owner and lead tokens (issue 34 item 3 is another's).
    a = await startControllerProcess(stateDir, store.databaseUrl);
    stops.push(() => a.stop());
    b = await startControllerProcess(stateDir, store.databaseUrl);
    stops.push(() => b.stop());
    c = await startControllerProcess(stateDir, store.databaseUrl);
    stops.push(() => c.stop());
    sql = postgres(store.databaseUrl!, { max: 1, onnotice: () => {} });
    stops.push(() => sql.end());
    const owner = ownerOf(b.url, b.ownerToken);
    // A join token names every live replica's agent URL, the issuing one first.
    const listed = await owner.fleet.issueJoinToken({ machine: "listed", ttlMs: 0n });
    expect(listed.replicaAgentUrls[0]).toBe(b.agentUrl);
    expect([...listed.replicaAgentUrls].sort()).toEqual([a.agentUrl, b.agentUrl, c.agentUrl].sort());
    agent = await startAgent({
      stateDir: join(stateDir, "agent-box"),
      machine: "box",
      controllers: [a.agentUrl],
      joinToken: await owner.enroll("box"),
    });
    stops.push(() => agent.stop());
    await until(
      async () => (await owner.status.listMachines({})).machines.some((m) => m.name === "box" && m.online),
      "box online",
    );
    await owner.addMailbox("inbox");
    leadB = await connectLead(b.mcpUrl, b.leadToken);
    leadC = await connectLead(c.mcpUrl, c.leadToken);
    stops.push(
      () => leadB.close(),
      () => leadC.close(),
    );
    // Both B and C hold a live reverse link to the agent before A goes.
    for (const [lead, name] of [
      [leadB, "B"],
      [leadC, "C"],
    ] as const)
      await until(
        async () =>
          (await lead.call("message_seat", { seat: "inbox", message: `warm-up through ${name}` })).structuredContent
            ?.outcome === "delivered",
        `a delivery through ${name}`,
        100,
      );
  }, 180_000);

  afterAll(async () => {
    for (const s of stops.reverse()) await s().catch(() => {});
  });

  it("kill -9 of the replica it joined through: the seat is never offline on the others, heartbeats go on elsewhere, and a 2.5 s delivery through C in flight when A dies ends delivered", async () => {
    const ownerB = ownerOf(b.url, b.ownerToken);
    const ownerC = ownerOf(c.url, c.ownerToken);
    const offline: string[] = [];
    const rowAges: number[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const [row] = await sql<
          { age_ms: number }[]
        >`select (extract(epoch from now() - last_seen_at) * 1000)::float8 as age_ms from machines where name = 'box'`;
        rowAges.push(row!.age_ms);
        for (const [o, name] of [
          [ownerB, "B"],
          [ownerC, "C"],
        ] as const) {
          const seat = (await o.seats()).find((s) => s.id === "box/inbox");
          if (!seat?.online) offline.push(`${name} at ${new Date().toISOString()}`);
        }
        await sleep(200);
      }
    })();

    // The agent stalls 2.5 s with the call on it; A dies 300 ms into the call.
    process.kill(agent.child.pid!, "SIGSTOP");
    const started = performance.now();
    const slow = leadC.call("message_seat", { seat: "inbox", message: "slow, through C, while A dies" });
    await sleep(300);
    a.child.kill("SIGKILL");
    await sleep(2_200);
    process.kill(agent.child.pid!, "SIGCONT");
    const res = await slow;
    const slowMs = performance.now() - started;
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "delivered" });
    expect(performance.now() - started).toBeGreaterThan(2_400);

    // A second 2.5 s delivery, A dead for longer than the offline threshold (3 heartbeats of
    // 2 s): before ADR 0038 the machine was offline by now and the call was cut uncertain at ~2 s.
    await sleep(5_000);
    process.kill(agent.child.pid!, "SIGSTOP");
    const lateStarted = performance.now();
    const late = leadB.call("message_seat", { seat: "inbox", message: "slow, through B, A long dead" });
    await sleep(2_500);
    process.kill(agent.child.pid!, "SIGCONT");
    expect((await late).structuredContent).toMatchObject({ outcome: "delivered" });
    const lateMs = performance.now() - lateStarted;

    // Heartbeats arrive through B or C on time: the row is never older than about an interval
    // and a half (a vouching replica only touches rows already older than that).
    await sleep(3_000);
    const ages: number[] = [];
    for (let i = 0; i < 25; i++) {
      const [row] = await sql<
        { age_ms: number }[]
      >`select (extract(epoch from now() - last_seen_at) * 1000)::float8 as age_ms from machines where name = 'box'`;
      ages.push(row!.age_ms);
      await sleep(200);
    }
    expect(Math.max(...ages), `last_seen_at ages ${ages.map(Math.round).join(",")}`).toBeLessThan(3_000);
    await sleep(2_000);
    watching = false;
    await watcher;
    expect(offline).toEqual([]);
    // The figures for the report: the machine row's oldest age from the kill on (two 2.5 s stalls
    // of the agent included) against the 6 s offline threshold, and the slow deliveries' lengths.
    console.log(
      `issue 34 item 2: last_seen_at max age ${Math.round(Math.max(...rowAges))} ms over ${rowAges.length} samples; slow deliveries ${Math.round(slowMs)} ms and ${Math.round(lateMs)} ms, delivered`,
    );

    // The agent now remembers the live replicas, B and C, as well as the URL it was given.
    const stored = storedUrls(agent.stateDir);
    expect(stored).toEqual(expect.arrayContaining([b.agentUrl, c.agentUrl, a.agentUrl]));
  }, 60_000);

  it("the replica it now heartbeats through hangs (SIGSTOP): it moves on within about one interval and the seat is never offline on the other", async () => {
    const moved = () =>
      agent
        .stderr()
        .split("\n")
        .filter((l) => l.includes("the gateway moved to another replica"))
        .map((l) => (JSON.parse(l) as { to: string }).to);
    const current = moved().at(-1);
    expect([b.agentUrl, c.agentUrl]).toContain(current);
    const [hung, other] = current === b.agentUrl ? [b, c] : [c, b];
    const ownerOther = ownerOf(other.url, other.ownerToken);
    const before = moved().length;
    hung.child.kill("SIGSTOP");
    try {
      const ages: number[] = [];
      const offline: number[] = [];
      for (let i = 0; i < 40; i++) {
        const [row] = await sql<
          { age_ms: number }[]
        >`select (extract(epoch from now() - last_seen_at) * 1000)::float8 as age_ms from machines where name = 'box'`;
        ages.push(row!.age_ms);
        if (!(await ownerOther.seats()).find((s) => s.id === "box/inbox")?.online) offline.push(i);
        await sleep(200);
      }
      expect(offline).toEqual([]);
      // One interval (2 s) until the next heartbeat, at most one more waiting on the hung replica.
      expect(Math.max(...ages), `last_seen_at ages ${ages.map(Math.round).join(",")}`).toBeLessThan(5_000);
      expect(moved().slice(before)).toContain(other.agentUrl);
      console.log(
        `issue 34 item 2: with the heartbeat replica hung, last_seen_at max age ${Math.round(Math.max(...ages))} ms`,
      );
    } finally {
      hung.child.kill("SIGCONT");
    }
  }, 60_000);

  it("an agent given two --controller URLs, the first dead, joins and registers through the second; restarted with only the dead one, it comes back through the replicas it stored", async () => {
    const owner = ownerOf(b.url, b.ownerToken);
    const dir = tempDir("agent-two-urls");
    const second = await startAgent({
      stateDir: dir,
      machine: "second",
      controllers: [a.agentUrl, b.agentUrl],
      joinToken: await owner.enroll("second"),
    });
    stops.push(() => second.stop());
    await until(
      async () => (await owner.status.listMachines({})).machines.some((m) => m.name === "second" && m.online),
      "second online through B",
      100,
    );
    expect(storedUrls(dir)).toEqual(expect.arrayContaining([b.agentUrl, c.agentUrl]));
    await second.stop();

    await sql`update machines set last_seen_at = now() - interval '1 minute' where name = 'second'`;
    const again = await startAgent({ stateDir: dir, machine: "second", controllers: [a.agentUrl] });
    stops.push(() => again.stop());
    await until(
      async () => (await owner.status.listMachines({})).machines.some((m) => m.name === "second" && m.online),
      "second online again after a restart",
      100,
    );
  }, 60_000);
});
