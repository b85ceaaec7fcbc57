/**
 * `npm run verify [-- --quick] [-- --ha]`: a Jepsen-style run over real processes on a real
 * PostgreSQL. A private PostgreSQL cluster, a `clankie controller` and a `clankie agent`
 * with mailbox seats and a real Pi seat (pi-seat.ts); many concurrent leads (the official MCP client, one conversation
 * each) send unique messages and replay some ids; the nemeses (nemesis.ts) strike in turn.
 * Every call is recorded invoke → ok | fail | info; after healing, each `info` is
 * reconciled with reconcile_seat_call and looked up in `clankie seat-delivery list`, and
 * the checker (checker.ts) reads the history against the seats' own records.
 * Writes verify/results/latest.json (full, ≥10,000 ops) or quick.json (--quick, ≥2,000).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, createWriteStream } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
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
import { MailboxStore } from "../node-agent/mailbox/store.js";
import { startLinkRelay } from "./link-relay.js";
import { piBinary, startPiSeat, type PiSeat } from "./pi-seat.js";
import { outcomesByNemesis, type NemesisWindow } from "./attribution.js";
import { startPgCluster } from "./pg-cluster.js";
import { freePort } from "./ports.js";
import { agentProcess, CLI, controllerProcess, token } from "./processes.js";
import { applyNemesis, NEMESES, SCHEDULE, type NemesisName } from "./nemesis.js";
import type { InfoResolution, Op, SeatRecord } from "./history.js";
import { connectLead, firstInfos, outcomeTally, startLeads, type Lead } from "./leads.js";
import { check, publishReport } from "./checker.js";

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const quick = args.includes("--quick");
const MODE = quick ? "quick" : "full";
const OPS = flag("ops", quick ? 2_000 : 10_000);
const LEADS = flag("leads", 16);
const SEATS = flag("seats", 8);
const DOWN_MS = flag("down-ms", 3_000);
const GAP_MS = flag("gap-ms", quick ? 2_500 : 4_000);
const REPLAY_EVERY = 10;
/** Every HARNESS_EVERY-th op goes to the real Pi seat (its turns cost a model call each). */
const HARNESS_EVERY = flag("harness-every", 20);
const WITH_HARNESS = !args.includes("--no-harness");
/** Where the agent link is advertised and the partition relay listens (the real listener is on 127.0.0.1). */
const LINK_HOST = "127.0.0.2";
const resultsDir = fileURLToPath(new URL("../../verify/results/", import.meta.url));
const outFile = args.includes("--out")
  ? args[args.indexOf("--out") + 1]!
  : join(resultsDir, quick ? "quick.json" : "latest.json");

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => process.stderr.write(`[verify ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

async function main(): Promise<void> {
  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), "c11-verify-"));
  mkdirSync(resultsDir, { recursive: true });
  const piBin = WITH_HARNESS ? piBinary() : undefined;
  if (WITH_HARNESS && !piBin)
    throw new Error(
      "the Pi harness is not installed (.harnesses/pi): run npm run harnesses:install -- pi, or pass --no-harness",
    );
  log(`mode ${MODE}: ${OPS} ops, ${LEADS} leads, ${SEATS} mailbox seats, work dir ${work}`);

  const pg = await startPgCluster();
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
  await admin.unsafe("create database clankie_verify");
  await admin.end();
  const dbUrl = pg.url.replace(/\/postgres$/, "/clankie_verify");
  const controllerPort = await freePort();
  const agentPort = await freePort();
  const stateDir = join(work, "controller");
  const agentStateDir = join(work, "agent");
  const relay = await startLinkRelay(LINK_HOST, agentPort, "127.0.0.1");
  const controller = controllerProcess(stateDir, controllerPort, agentPort, LINK_HOST, dbUrl, work);
  await controller.start();
  const url = `http://127.0.0.1:${controllerPort}`;
  const mcpUrl = `${url}/mcp`;
  // The agent dials the controller's mutual-TLS agent port (ADR 0021) at its advertised URL, the
  // relay; the replica list its reverse link follows names that URL too, so the whole link is cut there.
  const joinToken = (
    JSON.parse(
      execFileSync(process.execPath, [CLI, "fleet", "enroll", "vbox", "--json", "--state-dir", stateDir], {
        encoding: "utf8",
      }),
    ) as { token: string }
  ).token;
  const pi: PiSeat | undefined = piBin ? await startPiSeat(work, piBin) : undefined;
  const agent = agentProcess(
    agentStateDir,
    `https://${LINK_HOST}:${agentPort}`,
    joinToken,
    work,
    pi ? { tmuxSocket: pi.tmuxSocket, env: pi.agentEnv } : undefined,
  );
  await agent.start();

  const transport = createGrpcTransport({
    baseUrl: url,
    interceptors: [bearerHeaderInterceptor(() => token(stateDir, "owner"))],
  });
  const owner = createClient(OwnerService, transport);
  const status = createClient(StatusService, transport);
  const agentOnline = async (limitMs: number) => {
    const t0 = Date.now();
    while (Date.now() - t0 < limitMs) {
      const ms = await status
        .listMachines(create(ListMachinesRequestSchema, {}), { timeoutMs: 2000 })
        .catch(() => undefined);
      if (ms?.machines.some((m) => m.name === "vbox" && m.online)) return true;
      await sleep(200);
    }
    return false;
  };
  if (!(await agentOnline(30_000))) throw new Error("the agent never came online");
  const seats = Array.from({ length: SEATS }, (_, i) => `m${i}`);
  for (const s of seats)
    await owner.addSeat(create(AddSeatRequestSchema, { machine: "vbox", name: s, kind: SeatKind.MAILBOX }));
  const leads: Lead[] = [];
  for (let i = 0; i < LEADS; i++) {
    const name = `verify-lead-${i}`;
    leads.push({
      name,
      token: (await owner.issueLeadToken(create(IssueLeadTokenRequestSchema, { conversationId: name }))).token,
    });
  }
  let piSeatId: string | undefined;
  if (pi) {
    const hirer = leads[0]!;
    hirer.client = await connectLead(mcpUrl, hirer);
    piSeatId = await pi.hire(hirer.client);
    log(`hired the Pi seat ${piSeatId}`);
  }
  const seatOf = (op: number) =>
    piSeatId && op % HARNESS_EVERY === HARNESS_EVERY - 1 ? piSeatId : seats[op % seats.length]!;

  const history: Op[] = [];
  const historyFile = createWriteStream(join(resultsDir, `history-${MODE}.jsonl`));
  const record = (o: Op) => {
    history.push(o);
    historyFile.write(JSON.stringify(o) + "\n");
  };
  let stop = false;
  const t0 = performance.now();
  let workload: ReturnType<typeof startLeads> | undefined;

  const nemesisCounts: Record<string, number> = Object.fromEntries(NEMESES.map((n) => [n, 0]));
  const targets = { controller, agent, pg, agentLinkRelay: relay };
  const windows: NemesisWindow[] = [];
  const nemesisLoop = async () => {
    for (let i = 0; !stop; i++) {
      await sleep(GAP_MS);
      if (stop) break;
      const name: NemesisName = SCHEDULE[i % SCHEDULE.length]!;
      log(`nemesis ${name} (${workload?.issued() ?? 0}/${OPS} ops issued)`);
      const startMs = performance.now() - t0;
      try {
        await applyNemesis(name, targets, DOWN_MS);
        nemesisCounts[name]!++;
        windows.push({ name, startMs, endMs: performance.now() - t0 });
      } catch (e) {
        log(`nemesis ${name} failed: ${(e as Error).message}`);
        if (!controller.running()) await controller.start().catch(() => {});
        if (!agent.running()) await agent.start().catch(() => {});
      }
    }
  };

  const cleanup = async () => {
    await relay.up().catch(() => {});
    await agent.stop().catch(() => {});
    await controller.stop().catch(() => {});
    await relay.close().catch(() => {});
    await pi?.close().catch(() => {});
    await pg.stop().catch(() => {});
  };
  process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));

  try {
    const nemesis = nemesisLoop();
    workload = startLeads(leads, {
      mcpUrl,
      ops: OPS,
      replayEvery: REPLAY_EVERY,
      seatOf,
      record,
      t0,
      stopped: () => stop,
    });
    await workload.done;
    stop = true;
    await nemesis;
    const runMs = performance.now() - t0;
    log(`ops done in ${Math.round(runMs / 1000)} s; healing`);
    await relay.up();
    agent.resume();
    if (!controller.running()) await controller.start();
    if (!agent.running()) await agent.start();
    if (!(await agentOnline(60_000))) log("warning: the agent is not online after healing");
    // Outcomes the journal missed during an outage are recorded once it is back.
    await sleep(6_000);

    // Each indeterminate op: the lead reconciles it, then the journal and the owner's list are read.
    const infosToReconcile = firstInfos(history);
    for (const o of infosToReconcile.values()) {
      const lead = leads.find((l) => l.name === o.lead)!;
      lead.client ??= await connectLead(mcpUrl, lead);
      await lead.client
        .callTool({ name: "reconcile_seat_call", arguments: { deliveryId: o.deliveryId } }, undefined, {
          timeout: 30_000,
        })
        .catch(() => undefined);
    }
    const listed = new Set<string>(
      (
        JSON.parse(
          execFileSync(process.execPath, [CLI, "seat-delivery", "list", "--json", "--state-dir", stateDir], {
            encoding: "utf8",
          }),
        ) as { unresolved: { id: string }[] }
      ).unresolved.map((r) => r.id),
    );
    const journal = postgres(dbUrl, { max: 1, onnotice: () => {} });
    const ids = [...infosToReconcile.values()].map((o) => o.deliveryId);
    const states = new Map<string, string>();
    for (let i = 0; i < ids.length; i += 500) {
      for (const row of await journal<
        { id: string; state: string }[]
      >`select id, state from delivery_receipts where id in ${journal(ids.slice(i, i + 500))}`)
        states.set(row.id, row.state);
    }
    await journal.end();
    const infos: InfoResolution[] = [...infosToReconcile.values()].map((o) => ({
      op: o.op,
      receiptState: states.get(o.deliveryId) ?? "none",
      listed: listed.has(o.deliveryId),
    }));

    const store = new MailboxStore(join(agentStateDir, "mailboxes"));
    const records: SeatRecord[] = [];
    for (const s of seats) {
      for (const e of store.list(s).entries) {
        // Notices about uncertain deliveries are the controller's own messages, not a lead's effect.
        if (e.conversationId === "clankie-notice") continue;
        records.push({ seat: s, deliveryId: e.deliveryId, conversationId: e.conversationId, text: e.text });
      }
    }
    // The Pi seat's own record: the session files Pi itself writes.
    if (pi && piSeatId) records.push(...pi.records(piSeatId));
    const result = check(history, records, infos);
    const report = {
      mode: MODE,
      ops: result.ops,
      duplicates: result.duplicates,
      lost_acknowledged: result.lost_acknowledged,
      info_unlisted: result.info_unlisted,
      replay_changed: result.replay_changed,
      nemeses: NEMESES.filter((n) => nemesisCounts[n]! > 0),
      nemesis_counts: nemesisCounts,
      failed_with_effect: result.failed_with_effect,
      ok: result.ok,
      fail: result.fail,
      info: result.info,
      info_reconciled: result.info_reconciled,
      info_listed: result.info_listed,
      replays: result.replays,
      replay_expired: result.replay_expired,
      seat_records: records.length,
      harness_seats: piSeatId
        ? [
            {
              seat: piSeatId,
              harness: "pi",
              ops: history.filter((o) => o.type !== "invoke" && o.replayOf === undefined && o.seat === piSeatId).length,
              ok: history.filter((o) => o.type === "ok" && o.replayOf === undefined && o.seat === piSeatId).length,
              records: records.filter((r) => r.seat === piSeatId).length,
              model_requests: pi!.mock.requests.length,
            },
          ]
        : [],
      agent_link_relay: await relay.stats(),
      outcomes_by_nemesis: outcomesByNemesis(history, windows),
      leads: LEADS,
      seats: SEATS,
      run_seconds: Math.round(runMs / 1000),
      total_seconds: Math.round((Date.now() - started) / 1000),
      ops_per_second: Math.round((result.ops / (runMs / 1000)) * 10) / 10,
      outcomes: outcomeTally(history),
      examples: result.examples,
      finished_at: new Date().toISOString(),
    };
    process.exitCode = publishReport(outFile, report, OPS);
  } finally {
    historyFile.end();
    await cleanup();
    // --keep leaves the processes' logs (controller.log, agent.log) for a post-mortem.
    if (args.includes("--keep")) log(`work dir kept: ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

// `--ha`: the same kind of run on three replicas behind a load balancer (ha-run.ts).
(args.includes("--ha")
  ? import("./ha-run.js").then(async (m) => void (process.exitCode = await m.runHa(args)))
  : main()
).catch((e) => {
  process.stderr.write(`verify failed: ${(e as Error).stack}\n`);
  process.exit(2);
});
