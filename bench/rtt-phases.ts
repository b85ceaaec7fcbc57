/**
 * `node dist/bench/rtt-phases.js [--n 400] [--one-way-ms 25] [--cli OTHER/dist/controller/cli/main.js] [--out FILE]`: where a delivery's
 * time goes when its agent link has a round trip (issue 17: what bounds
 * `peer.rtt50.agent_p50_minus_rtt_ms`, measured). One bench fleet on a scratch PostgreSQL database;
 * an MCP client of its own talks to the controller through a relay that only notes when each
 * chunk passes, and the agent's reverse link runs through one that also holds each chunk. Blocks
 * of ten deliveries alternate between no hold and the given one-way hold, so both sides share
 * the machine's noise. Each delivery is cut at the chunks into: the lead's client sending, the
 * controller before its Deliver call (admission statement), the agent (proofs, gate, mailbox
 * write), the spread of the agent's answer from its first chunk to its last (Node sends gRPC's
 * trailers one loop turn after the message; docs/benchmarks.md, seventh pass), the controller
 * after the verdict (settle statement, the answer), and the client reading it. Prints and
 * writes each phase's p50 per side and the difference. `--cli` runs another build's controller
 * and agent (the tool stays this one), to compare two builds run after each other.
 */
import { createServer, connect, type AddressInfo, type Socket } from "node:net";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createScratchDatabase } from "./databases.js";
import { startBenchFleet } from "./fleet.js";
import { REPO_ROOT } from "./paths.js";
import { percentile, round } from "./stats.js";
import { runTool } from "./tool-main.js";

type Mark = { at: number; leg: string };

/** A relay that notes each chunk's arrival on `leg` + ">" (client to target) or "<", holding each `hold()` ms. */
async function relay(host: string, port: number, leg: string, marks: { list: Mark[] | undefined }, hold: () => number): Promise<{ port: number; close: () => Promise<void>; accepted: () => number }> {
  let accepted = 0;
  const sockets = new Set<Socket>();
  const server = createServer((down) => {
    accepted++;
    const up = connect({ host, port });
    for (const s of [down, up]) {
      s.setNoDelay(true);
      sockets.add(s);
      s.on("error", () => {});
      s.once("close", () => sockets.delete(s));
    }
    const pipe = (from: Socket, to: Socket, dir: string) =>
      from.on("data", (chunk: Buffer) => {
        marks.list?.push({ at: performance.now(), leg: leg + dir });
        const ms = hold();
        if (ms <= 0) to.write(chunk);
        else setTimeout(() => to.write(chunk), ms);
      });
    pipe(down, up, ">");
    pipe(up, down, "<");
    down.once("close", () => up.destroy());
    up.once("close", () => down.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  // A server's close waits for its connections to end: the relayed ones are cut first.
  const close = () => new Promise<void>((r) => {
    server.close(() => r());
    sockets.forEach((s) => s.destroy());
  });
  return { port: (server.address() as AddressInfo).port, close, accepted: () => accepted };
}

const PHASES = ["client_sending", "controller_before_deliver", "agent", "agent_answer_spread", "controller_after_verdict", "client_reading", "total_minus_held"] as const;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { n: { type: "string" }, "one-way-ms": { type: "string" }, cli: { type: "string" }, out: { type: "string" } } });
  const n = Number(values.n ?? 400);
  const oneWay = Number(values["one-way-ms"] ?? 25);
  const out = values.out ?? join(REPO_ROOT, "bench", "results", "rtt-phases.json");
  const db = await createScratchDatabase();
  const fleet = await startBenchFleet({ databaseUrl: db.url, seats: 1, ...(values.cli ? { cli: values.cli } : {}) });
  const marks: { list: Mark[] | undefined } = { list: undefined };
  let held = 0;
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const mcp = new URL(fleet.controller.ready.mcpUrl!);
    const mcpRelay = await relay(mcp.hostname, Number(mcp.port), "mcp", marks, () => 0);
    closers.push(mcpRelay.close);
    const agentUrl = new URL(fleet.agentEndpoint);
    const linkRelay = await relay(agentUrl.hostname, Number(agentUrl.port), "link", marks, () => held);
    closers.push(linkRelay.close);
    await fleet.routeAgentVia!(`http://127.0.0.1:${linkRelay.port}`, linkRelay.accepted);
    const lead = new Client({ name: "clankie-bench-rtt-phases", version: "0.0.0" });
    await lead.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${mcpRelay.port}${mcp.pathname}`), { requestInit: { headers: { authorization: `Bearer ${fleet.leadToken}` } } }));
    closers.unshift(() => lead.close());
    const seat = fleet.seatIds[0]!;
    let sent = 0;
    const send = () => lead.callTool({ name: "message_seat", arguments: { seat, message: `rtt phases ${++sent}` } });
    for (let i = 0; i < 20; i++) await send();
    const sides = new Map<number, Record<(typeof PHASES)[number], number[]>>();
    for (const d of [0, oneWay]) sides.set(d, Object.fromEntries(PHASES.map((p) => [p, []])) as unknown as Record<(typeof PHASES)[number], number[]>);
    let failed = 0;
    const failures: Record<string, number> = {};
    for (let i = 0; i < n; i++) {
      held = Math.floor(i / 10) % 2 ? oneWay : 0;
      marks.list = [];
      const t0 = performance.now();
      const res = await send();
      const t1 = performance.now();
      const list = marks.list;
      marks.list = undefined;
      const first = (leg: string) => list.find((m) => m.leg === leg)?.at;
      const last = (leg: string) => list.filter((m) => m.leg === leg).at(-1)?.at;
      const [mcpIn, linkOut, agentOut, linkBack, mcpBack] = [last("mcp>"), first("link<"), first("link>"), last("link>"), last("mcp<")];
      if ((res.structuredContent as { outcome?: string } | undefined)?.outcome !== "delivered" || [mcpIn, linkOut, agentOut, linkBack, mcpBack].some((v) => v === undefined)) {
        failed++;
        // Why, so a run with failures says whether the delivery failed or a relay missed a chunk.
        const body = res.structuredContent as { outcome?: string; reason?: string } | undefined;
        const why = body?.outcome !== "delivered" ? `${body?.outcome ?? "no body"}: ${body?.reason ?? "no reason"}` : "a relay saw no chunk on a leg";
        failures[why] = (failures[why] ?? 0) + 1;
        continue;
      }
      const s = sides.get(held)!;
      s.client_sending.push(mcpIn! - t0);
      s.controller_before_deliver.push(linkOut! - mcpIn!);
      // The request reaches the agent `held` ms after the relay got it; its verdict leaves at agentOut.
      s.agent.push(agentOut! - (linkOut! + held));
      // From the answer's first chunk leaving the agent to its last (the gRPC trailers, when they go apart).
      s.agent_answer_spread.push(linkBack! - agentOut!);
      s.controller_after_verdict.push(mcpBack! - (linkBack! + held));
      s.client_reading.push(t1 - mcpBack!);
      s.total_minus_held.push(t1 - t0 - 2 * held);
    }
    const p50s = (d: number) => Object.fromEntries(PHASES.map((p) => [p, round(percentile(sides.get(d)![p], 50))]));
    const loop = p50s(0);
    const held50 = p50s(oneWay);
    const result = {
      when: new Date().toISOString(),
      deliveries: n,
      failed,
      failures,
      one_way_ms: oneWay,
      p50_ms: { no_hold: loop, [`held_${oneWay}ms_each_way`]: held50 },
      difference_ms: Object.fromEntries(PHASES.map((p) => [p, round(held50[p]! - loop[p]!)])),
      method: "alternating blocks of 10 deliveries; phases cut where chunks pass the two relays (MCP leg unheld, agent link held or not); the relays' own hops are in both sides",
    };
    writeFileSync(out, JSON.stringify(result, null, 2) + "\n");
    process.stdout.write(JSON.stringify(result, null, 1) + "\n");
  } finally {
    for (const c of closers) await c().catch(() => {});
    await fleet.close();
    await db.drop();
  }
}

runTool(main);
