/**
 * Section: liveness (rule 55). Real `clankie controller` and `clankie agent` processes with
 * the default heartbeat; the agent is frozen with SIGSTOP (its sockets stay open and nothing
 * answers, as when its host vanishes) while a lead's message_seat is about to be in flight.
 * Measured from the freeze: how long until the owner's status shows the machine offline
 * (`offline_detect_s`), and until the in-flight message_seat answers uncertain
 * (`inflight_uncertain_s`). The spec's bound for both is 10 s.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ListMachinesRequestSchema, StatusService } from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { bearerHeaderInterceptor } from "../../shared/rpc/bearer-auth.js";
import { removeScratch, scratchDir } from "../paths.js";
import { spawnClankie, type ClankieProcess } from "../processes.js";
import { ownerClient } from "../owner-client.js";
import { round } from "../stats.js";

export interface LivenessConfig {
  rounds: number;
}

const MACHINE = "liveagent";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runLiveness(cfg: LivenessConfig, databaseUrl: string | undefined) {
  const stateDir = scratchDir("liveness");
  const env = { ...process.env };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  else delete env.DATABASE_URL;
  const controller = await spawnClankie(
    ["controller", "--state-dir", stateDir, "--port", "0", "--log-level", "error"],
    env,
  );
  let agent: ClankieProcess | undefined;
  let lead: Client | undefined;
  try {
    const url = controller.ready.url!;
    const token = (f: string) => readFileSync(join(stateDir, f), "utf8").trim();
    // The agent joins with a single-use token in its environment and dials the mutual-TLS agent port.
    const agentEnv: NodeJS.ProcessEnv = {
      ...process.env,
      CLANKIE_JOIN_TOKEN: await ownerClient(url, token("owner.token")).enroll(MACHINE),
    };
    delete agentEnv.DATABASE_URL;
    agent = await spawnClankie(
      [
        "agent",
        "--controller",
        controller.ready.agentUrl!,
        "--state-dir",
        join(stateDir, "agent"),
        "--machine",
        MACHINE,
        "--log-level",
        "error",
      ],
      agentEnv,
    );
    await ownerClient(url, token("owner.token")).addMailbox(MACHINE, "inbox");
    const status = createClient(
      StatusService,
      createGrpcTransport({ baseUrl: url, interceptors: [bearerHeaderInterceptor(() => token("owner.token"))] }),
    );
    const online = async () =>
      (await status.listMachines(create(ListMachinesRequestSchema, {}))).machines.find((m) => m.name === MACHINE)
        ?.online === true;
    lead = new Client({ name: "clankie-bench-liveness", version: "0.0.0" });
    await lead.connect(
      new StreamableHTTPClientTransport(new URL(controller.ready.mcpUrl!), {
        requestInit: { headers: { authorization: `Bearer ${token("lead.token")}` } },
      }),
    );

    const offline: number[] = [];
    const uncertain: number[] = [];
    const outcomes: Record<string, number> = {};
    for (let i = 0; i < cfg.rounds; i++) {
      for (let w = 0; w < 600 && !(await online()); w++) await sleep(100);
      // Warm: one delivery through the live agent, so the freeze hits an open connection.
      await lead.callTool({
        name: "message_seat",
        arguments: { seat: `${MACHINE}/inbox`, message: `liveness warm-up ${i}` },
      });
      const pid = agent.child.pid!;
      process.kill(pid, "SIGSTOP");
      const t0 = performance.now();
      try {
        const call = lead
          .callTool(
            { name: "message_seat", arguments: { seat: `${MACHINE}/inbox`, message: `liveness in flight ${i}` } },
            undefined,
            { timeout: 120_000 },
          )
          .then((res) => {
            uncertain.push(performance.now() - t0);
            const o = String((res.structuredContent as { outcome?: string } | undefined)?.outcome ?? "error");
            outcomes[o] = (outcomes[o] ?? 0) + 1;
          });
        let seenOffline = false;
        for (let w = 0; w < 1200 && !seenOffline; w++) {
          if (!(await online())) {
            offline.push(performance.now() - t0);
            seenOffline = true;
          } else await sleep(50);
        }
        await call;
      } finally {
        process.kill(pid, "SIGCONT");
      }
    }
    const s = (xs: number[]) => (xs.length ? round(Math.max(...xs) / 1000, 2) : Number.NaN);
    return {
      offline_detect_s: s(offline),
      inflight_uncertain_s: s(uncertain),
      rounds: cfg.rounds,
      outcomes,
      samples_s: {
        offline: offline.map((x) => round(x / 1000, 2)),
        inflight_uncertain: uncertain.map((x) => round(x / 1000, 2)),
      },
      database: databaseUrl ? "postgres" : "pglite",
      note: "worst round, seconds from SIGSTOP of the agent process to (a) the owner's ListMachines showing it offline, (b) the in-flight message_seat answering; default heartbeat interval",
    };
  } finally {
    await lead?.close().catch(() => {});
    await agent?.stop();
    await controller.stop();
    removeScratch(stateDir);
  }
}
