/**
 * The HA topology of the verification run and the bench's high_availability section, all on loopback
 * (no namespaces): three `clankie controller` replicas on one private PostgreSQL primary with a streaming
 * standby (pg-pair.ts, one multi-host URL), HAProxy in TCP mode in front of the replicas' lead ports (one
 * MCP URL) and agent ports (one agent URL), and agents that dial the balancer's agent URL.
 * Each replica's agent port listens on 127.0.0.1 but is advertised (server certificate, replica list the
 * agents' reverse links follow) at its own relay, 127.0.0.(11+i) (link-relay.ts), and the balancer's agent
 * backend goes through that relay too: `partition(i)` cuts replica i from every agent, both ways, while
 * the leads still reach it. The balancer checks each replica's /readyz on its lead port for both backends,
 * so a paused or dead replica leaves the rotation within about a second.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import postgres from "postgres";
import {
  AddSeatRequestSchema,
  IssueLeadTokenRequestSchema,
  OwnerService,
} from "../shared/gen/clankie/fleet/v1/owner_pb.js";
import { ListMachinesRequestSchema, StatusService } from "../shared/gen/clankie/fleet/v1/status_pb.js";
import { SeatKind } from "../shared/gen/clankie/fleet/v1/seat_pb.js";
import { bearerHeaderInterceptor } from "../shared/rpc/bearer-auth.js";
import { startLinkRelay, type LinkRelay } from "./link-relay.js";
import { startPgPair, type PgPair } from "./pg-pair.js";
import { freePort } from "./ports.js";
import { installWriteAudit } from "./ha-checks.js";
import { agentProcess, CLI, managed, token, type Managed } from "./processes.js";

export const HAPROXY = process.env.HAPROXY_BIN ?? "/usr/sbin/haproxy";
const DATABASE = "clankie_ha";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Replica {
  index: number;
  stateDir: string;
  port: number;
  agentPort: number;
  url: string;
  process: Managed;
  relay: LinkRelay;
}

export interface HaCluster {
  pg: PgPair;
  databaseUrl: string;
  replicas: Replica[];
  agents: Map<string, { stateDir: string; process: Managed }>;
  /** The balancer's MCP URL and agent URL. */
  mcpUrl: string;
  agentUrl: string;
  lbUrl: string;
  /** Owner calls on replica `i` with its own state dir's owner token (every token, once tokens are fleet state). */
  owner(
    i: number,
    url?: string,
  ): {
    owner: ReturnType<typeof createClient<typeof OwnerService>>;
    status: ReturnType<typeof createClient<typeof StatusService>>;
  };
  /** The machines online as replica `i` (or the first live one) sees them; undefined when none answered. */
  online(i?: number): Promise<string[] | undefined>;
  addMailboxes(machine: string, names: string[]): Promise<void>;
  issueLeadToken(conversation: string): Promise<string>;
  /** A client on the journal (the current primary) for the checks. */
  journal: postgres.Sql;
  stop(): Promise<void>;
}

export interface HaOptions {
  work: string;
  agents: string[];
  replicas?: number;
  deliverTimeoutMs?: number;
  log: (line: string) => void;
}

function writeHaproxy(
  dir: string,
  lbPort: number,
  lbAgentPort: number,
  replicas: { port: number; agentPort: number; relayHost: string }[],
): string {
  const lines = [
    "global",
    "  maxconn 4096",
    "defaults",
    "  mode tcp",
    "  timeout connect 2s",
    "  timeout client 1h",
    "  timeout server 1h",
    "  timeout check 1s",
  ];
  for (const [name, bind, agents] of [
    ["leads", lbPort, false],
    ["agents", lbAgentPort, true],
  ] as const) {
    lines.push(
      `frontend f_${name}`,
      `  bind 127.0.0.1:${bind}`,
      `  default_backend b_${name}`,
      `backend b_${name}`,
      "  balance roundrobin",
      "  option httpchk GET /readyz",
      "  http-check expect status 200",
    );
    replicas.forEach((r, i) => {
      const addr = agents ? `${r.relayHost}:${r.agentPort}` : `127.0.0.1:${r.port}`;
      lines.push(
        `  server r${i + 1} ${addr} check addr 127.0.0.1 port ${r.port} inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions`,
      );
    });
  }
  const cfg = join(dir, "haproxy.cfg");
  writeFileSync(cfg, `${lines.join("\n")}\n`);
  return cfg;
}

export async function startHaCluster(o: HaOptions): Promise<HaCluster> {
  const n = o.replicas ?? 3;
  const pg = await startPgPair();
  const replicas: Replica[] = [];
  const children: ChildProcess[] = [];
  const agents = new Map<string, { stateDir: string; process: Managed }>();
  let journal: postgres.Sql | undefined;
  const stop = async () => {
    for (const r of replicas) await r.relay.up().catch(() => {});
    for (const a of agents.values()) await a.process.stop().catch(() => {});
    for (const r of replicas) await r.process.stop().catch(() => {});
    for (const c of children) c.kill("SIGTERM");
    for (const r of replicas) await r.relay.close().catch(() => {});
    await journal?.end({ timeout: 1 }).catch(() => {});
    await pg.stop().catch(() => {});
  };
  // A setup that fails part way leaves nothing running.
  try {
    return await setUp();
  } catch (e) {
    await stop();
    throw e;
  }

  async function setUp(): Promise<HaCluster> {
    const admin = postgres(pg.primaryUrl("postgres"), { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${DATABASE}`);
    // One PostgreSQL role per replica, so the journal's own audit (ha-checks.ts) can tell whose write a row was.
    for (let i = 1; i <= n; i++) await admin.unsafe(`create role replica${i} superuser login`);
    await admin.end();
    const databaseUrl = pg.url(DATABASE);
    const db = postgres(databaseUrl.split("?")[0]!, {
      max: 2,
      onnotice: () => {},
      target_session_attrs: "read-write",
    } as postgres.Options<Record<string, never>>);
    journal = db;
    const lbPort = await freePort();
    const lbAgentPort = await freePort();
    for (let i = 0; i < n; i++) {
      const port = await freePort();
      const agentPort = await freePort();
      const relayHost = `127.0.0.${11 + i}`;
      const stateDir = join(o.work, `replica-${i + 1}`);
      mkdirSync(stateDir, { recursive: true });
      const relay = await startLinkRelay(relayHost, agentPort, "127.0.0.1");
      const args = [
        "controller",
        "--json",
        "--state-dir",
        stateDir,
        "--port",
        String(port),
        "--agent-host",
        "127.0.0.1",
        "--agent-port",
        String(agentPort),
        "--agent-advertise",
        relayHost,
        "--tls-name",
        "127.0.0.1",
        "--database-url",
        databaseUrl.replace("postgres://postgres@", `postgres://replica${i + 1}@`),
        "--deliver-timeout-ms",
        String(o.deliverTimeoutMs ?? 3_000),
        "--log-level",
        "warn",
      ];
      const proc = managed(`replica ${i + 1}`, () => args, /\n/, join(o.work, `replica-${i + 1}.log`));
      replicas.push({ index: i, stateDir, port, agentPort, url: `http://127.0.0.1:${port}`, process: proc, relay });
    }
    // As the recipe says: the first replica makes the fleet (its CA in the database), the others join it.
    for (const r of replicas) {
      await r.process.start();
      o.log(`replica ${r.index + 1} up on ${r.url} (agent port ${r.agentPort})`);
      if (r.index === 0) await installWriteAudit(db);
    }
    const cfg = writeHaproxy(
      o.work,
      lbPort,
      lbAgentPort,
      replicas.map((r) => ({ port: r.port, agentPort: r.agentPort, relayHost: r.relay.host })),
    );
    const haproxy = spawn(HAPROXY, ["-db", "-f", cfg], { stdio: ["ignore", "ignore", "pipe"] });
    haproxy.stderr!.on("data", (d: Buffer) => writeFileSync(join(o.work, "haproxy.log"), d, { flag: "a" }));
    children.push(haproxy);
    const lbUrl = `http://127.0.0.1:${lbPort}`;

    const owner = (i: number, url = replicas[i]!.url) => {
      const transport = createGrpcTransport({
        baseUrl: url,
        interceptors: [bearerHeaderInterceptor(() => token(replicas[i]!.stateDir, "owner"))],
      });
      return { owner: createClient(OwnerService, transport), status: createClient(StatusService, transport) };
    };
    const online = async (i?: number) => {
      for (const r of i === undefined ? replicas.filter((x) => x.process.running()) : [replicas[i]!]) {
        const ms = await owner(r.index)
          .status.listMachines(create(ListMachinesRequestSchema, {}), { timeoutMs: 2_000 })
          .catch(() => undefined);
        if (ms)
          return ms.machines
            .filter((m) => m.online)
            .map((m) => m.name)
            .sort();
      }
      return undefined;
    };
    const agentUrl = `https://127.0.0.1:${lbAgentPort}`;
    for (const machine of o.agents) {
      const joinToken = (
        JSON.parse(
          execFileSync(
            process.execPath,
            [CLI, "fleet", "enroll", machine, "--json", "--state-dir", replicas[0]!.stateDir],
            { encoding: "utf8" },
          ),
        ) as { token: string }
      ).token;
      const stateDir = join(o.work, `agent-${machine}`);
      const proc = agentProcess(stateDir, agentUrl, joinToken, o.work, undefined, machine);
      await proc.start();
      agents.set(machine, { stateDir, process: proc });
    }
    for (let t = Date.now(); ; await sleep(250)) {
      if ((await online(0))?.join() === [...o.agents].sort().join()) break;
      if (Date.now() - t > 60_000) throw new Error(`the agents never all came online (${(await online(0))?.join()})`);
    }
    return {
      pg,
      databaseUrl,
      replicas,
      agents,
      mcpUrl: `${lbUrl}/mcp`,
      agentUrl,
      lbUrl,
      owner,
      online,
      journal: db,
      async addMailboxes(machine, names) {
        for (const name of names)
          await owner(0).owner.addSeat(create(AddSeatRequestSchema, { machine, name, kind: SeatKind.MAILBOX }));
      },
      async issueLeadToken(conversation) {
        return (
          await owner(0).owner.issueLeadToken(create(IssueLeadTokenRequestSchema, { conversationId: conversation }))
        ).token;
      },
      stop,
    };
  }
}
