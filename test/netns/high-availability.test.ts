/**
 * Issue 34 item 6, the recipe of docs/high-availability.md run on separate hosts: HAProxy on a load-balancer
 * host in front of three replica hosts, two agent hosts with mailbox seats, a PostgreSQL primary and its
 * streaming standby on two more hosts, reached through one multi-host URL. Leads use one MCP URL and agents
 * one agent URL, both the balancer's. It kills a replica, restarts the replicas one at a time (an upgrade),
 * and promotes the standby, while a lead keeps sending; every message is delivered once or reconciled.
 */
import { randomUUID } from "node:crypto";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, assertBuilt } from "../kit/cli.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { removeDir } from "./hosts.js";
import { execFileSync } from "node:child_process";
import {
  addHost,
  baseBackup,
  initPrimary,
  promote,
  runIn,
  setupSwitch,
  startHaproxy,
  startPostgres,
  teardown,
  waitForPostgres,
  type Host,
} from "./ha-hosts.js";

const MCP_PORT = 7420;
const AGENT_PORT = 7421;

interface Replica {
  host: Host;
  stateDir: string;
  process: ChildProcess;
}

describe("issue 34 item 6: three replicas behind HAProxy, two agents, a PostgreSQL primary and standby", () => {
  let dir: string;
  const hosts: Host[] = [];
  const children: ChildProcess[] = [];
  let lb: Host;
  let pg1: Host;
  let pg2: Host;
  let primary: ChildProcess;
  let standbyData: string;
  const replicas: Replica[] = [];
  const agents = new Map<string, { host: Host; stateDir: string; process: ChildProcess }>();
  let databaseUrl: string;
  let ca: string;
  let leadToken: string;
  let ownerToken: string;
  let lead: LeadClient;
  const lbUrl = () => `https://${lb.ip}:${MCP_PORT}`;

  const startReplica = async (host: Host, stateDir: string): Promise<ChildProcess> => {
    const args = [
      "controller",
      "--json",
      "--host",
      "0.0.0.0",
      "--port",
      String(MCP_PORT),
      "--agent-port",
      String(AGENT_PORT),
      "--agent-advertise",
      host.ip,
      "--tls-name",
      lb.ip,
      "--state-dir",
      stateDir,
      "--database-url",
      databaseUrl,
      "--log-level",
      "warn",
    ];
    const p = runIn(host, [process.execPath, CLI, ...args]);
    children.push(p);
    p.stderr!.on("data", (d: Buffer) => process.stderr.write(`[${host.name}] ${d}`));
    await new Promise<string>((resolve, reject) => {
      createInterface({ input: p.stdout! }).once("line", resolve);
      p.once("exit", (c) => reject(new Error(`replica ${host.name} exited ${c}`)));
    });
    return p;
  };

  const startAgent = async (host: Host, joinToken: string | undefined): Promise<ChildProcess> => {
    const stateDir = agents.get(host.name)?.stateDir ?? join(dir, `agent-${host.name}`);
    const args = [
      "agent",
      "--machine",
      host.name,
      "--state-dir",
      stateDir,
      "--controller",
      `https://${lb.ip}:${AGENT_PORT}`,
      "--log-level",
      "warn",
      ...(joinToken ? ["--join", joinToken] : []),
    ];
    const p = runIn(host, [process.execPath, CLI, ...args]);
    children.push(p);
    p.stderr!.on("data", (d: Buffer) => process.stderr.write(`[${host.name}] ${d}`));
    agents.set(host.name, { host, stateDir, process: p });
    return p;
  };

  const owner = (url = lbUrl()) => ownerOf(url, ownerToken, ca);
  const online = async (url = lbUrl()) =>
    (await owner(url).fleet.listFleet({})).machines
      .filter((m) => m.status === "online")
      .map((m) => m.name)
      .sort();
  const until = async (what: string, ok: () => Promise<boolean>, timeoutMs = 60_000) => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      try {
        if (await ok()) return;
      } catch {
        // not yet
      }
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const mailbox = (machine: string) =>
    new MailboxStore(join(agents.get(machine)!.stateDir, "mailboxes")).list("inbox").entries;

  beforeAll(async () => {
    assertBuilt();
    dir = mkdtempSync(join(tmpdir(), "c34-ha-"));
    setupSwitch();
    lb = addHost("lb", 10);
    pg1 = addHost("pg1", 31);
    pg2 = addHost("pg2", 32);
    hosts.push(lb, pg1, pg2);
    const replicaHosts = [1, 2, 3].map((i) => addHost(`r${i}`, 10 + i));
    const agentHosts = [1, 2].map((i) => addHost(`a${i}`, 20 + i));
    hosts.push(...replicaHosts, ...agentHosts);

    const primaryData = initPrimary(dir);
    primary = startPostgres(pg1, primaryData);
    children.push(primary);
    await waitForPostgres(pg1);
    execFileSync("psql", ["-q", "-h", pg1.ip, "-U", "postgres", "-c", "create database clankie"]);
    standbyData = baseBackup(pg2, dir, pg1.ip);
    children.push(startPostgres(pg2, standbyData));
    await waitForPostgres(pg2);
    databaseUrl = `postgres://postgres@${pg1.ip}:5432,${pg2.ip}:5432/clankie?target_session_attrs=read-write`;

    children.push(
      startHaproxy(lb, dir, [
        {
          port: MCP_PORT,
          backends: replicaHosts.map((h) => ({ name: h.name, ip: h.ip, port: MCP_PORT, readyz: true })),
        },
        {
          port: AGENT_PORT,
          backends: replicaHosts.map((h) => ({ name: h.name, ip: h.ip, port: AGENT_PORT, readyz: false })),
        },
      ]),
    );
    // As the recipe says: the first replica makes the fleet (its CA, tokens), the others join its database.
    for (const h of replicaHosts) {
      const stateDir = join(dir, h.name);
      replicas.push({ host: h, stateDir, process: await startReplica(h, stateDir) });
    }
    const first = replicas[0]!.stateDir;
    ca = readFileSync(join(first, "fleet-ca.pem"), "utf8");
    leadToken = readFileSync(join(first, "lead.token"), "utf8").trim();
    ownerToken = readFileSync(join(first, "owner.token"), "utf8").trim();
    await until("the balancer to route to a ready replica", async () => Array.isArray(await online()));
    for (const h of agentHosts) await startAgent(h, await owner().enroll(h.name));
    await until("both agents online", async () => (await online()).join() === "a1,a2");
    for (const h of agentHosts) await owner().owner.addSeat({ machine: h.name, name: "inbox", kind: 1 });
    lead = await connectLead(`${lbUrl()}/mcp`, leadToken, ca);
  });

  afterAll(async () => {
    await lead?.close().catch(() => {});
    teardown(hosts, children);
    if (dir) removeDir(dir);
  });

  it("every lead and owner token works on every replica, directly and through the balancer", async () => {
    for (const r of replicas) {
      expect(readFileSync(join(r.stateDir, "lead.token"), "utf8").trim()).toBe(leadToken);
      const direct = await connectLead(`https://${r.host.ip}:${MCP_PORT}/mcp`, leadToken, ca);
      try {
        expect((await direct.call("list_seats", {})).isError).toBeFalsy();
      } finally {
        await direct.close();
      }
      expect(await online(`https://${r.host.ip}:${MCP_PORT}`)).toEqual(["a1", "a2"]);
    }
  });

  /** Sends `n` messages to each seat, one at a time, each with its own id; what the lead was told, by id. */
  const send = async (n: number, label: string) => {
    const told = new Map<string, { seat: string; text: string; outcome: string }>();
    for (let i = 0; i < n; i++) {
      for (const machine of ["a1", "a2"]) {
        const deliveryId = randomUUID();
        const text = `${label} ${i} to ${machine}`;
        let outcome: string;
        try {
          const r = await lead.call(
            "message_seat",
            { seat: `${machine}/inbox`, message: text },
            { "clankie/seat-call": { deliveryId } },
          );
          outcome = String(r.structuredContent?.outcome ?? "error");
        } catch {
          outcome = "lost_answer";
        }
        told.set(deliveryId, { seat: machine, text, outcome });
      }
    }
    return told;
  };

  /** Nothing delivered twice, nothing told delivered missing; an unclear one is reconciled by its id. */
  const audit = async (told: Map<string, { seat: string; text: string; outcome: string }>) => {
    for (const machine of ["a1", "a2"]) {
      const texts = mailbox(machine).map((e) => e.text);
      expect(new Set(texts).size, `${machine}: a message arrived twice`).toBe(texts.length);
    }
    for (const [deliveryId, t] of told) {
      const arrived = mailbox(t.seat).some((e) => e.text === t.text);
      if (t.outcome === "delivered") expect(arrived, `${t.text} was told delivered`).toBe(true);
      else if (t.outcome !== "not_sent") {
        const r = await lead.call("reconcile_seat_call", { deliveryId });
        expect(JSON.stringify(r.structuredContent)).not.toMatch(/unknown_delivery/);
      }
    }
  };

  it("a lead through the balancer delivers to a mailbox seat on each agent host", async () => {
    const told = await send(5, "steady");
    expect([...told.values()].every((t) => t.outcome === "delivered")).toBe(true);
    await audit(told);
  });

  it("kill -9 of a replica: no agent shown offline, the lead goes on through the balancer, nothing lost or twice", async () => {
    const victim = replicas[0]!;
    const sending = send(20, "kill");
    await new Promise((r) => setTimeout(r, 1000));
    victim.process.kill("SIGKILL");
    const seenOffline: string[] = [];
    const watching = (async () => {
      for (let i = 0; i < 20; i++) {
        const on = await online().catch(() => null);
        if (on && on.join() !== "a1,a2") seenOffline.push(on.join());
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    const told = await sending;
    await watching;
    expect(seenOffline).toEqual([]);
    await audit(told);
    // The replica comes back as an upgrade would: same state directory, same fleet.
    victim.process = await startReplica(victim.host, victim.stateDir);
    await until(
      "the replica back in rotation",
      async () => (await online(`https://${victim.host.ip}:${MCP_PORT}`)).join() === "a1,a2",
    );
  });

  it("replicas restarted one at a time (an upgrade): every message is delivered once or reconciled", async () => {
    const sending = send(30, "upgrade");
    for (const r of replicas) {
      r.process.kill("SIGTERM");
      await new Promise<void>((resolve) => r.process.once("exit", () => resolve()));
      r.process = await startReplica(r.host, r.stateDir);
    }
    await audit(await sending);
  });

  it("the primary killed and the standby promoted: deliveries resume, nothing acknowledged lost", async () => {
    const before = await send(3, "before failover");
    primary.kill("SIGKILL");
    const promotedAt = Date.now();
    promote(pg2, standbyData);
    let resumedAfterMs = Number.NaN;
    await until(
      "a delivery after the promotion",
      async () => {
        const r = await lead.call("message_seat", { seat: "a1/inbox", message: `probe ${randomUUID()}` });
        if (r.structuredContent?.outcome !== "delivered") return false;
        resumedAfterMs = Date.now() - promotedAt;
        return true;
      },
      90_000,
    );
    process.stderr.write(`[ha] deliveries resumed ${resumedAfterMs} ms after the promotion\n`);
    await audit(before);
    await audit(await send(3, "after failover"));
  });
});
