/**
 * `node dist/bench/rtt-phases.js [--n 400] [--one-way-ms 25] [--gap-ms 0] [--cli OTHER/dist/cli/main.js] [--out FILE]`: where a delivery's
 * time goes when its agent link has a round trip (issue 17: what bounds
 * `peer.rtt50.agent_p50_minus_rtt_ms`, measured). One bench fleet on a scratch PostgreSQL database;
 * an MCP client of its own talks to the controller through a relay that only notes when each
 * chunk passes, and the agent's reverse link runs through one that also holds each chunk. Blocks
 * of ten deliveries alternate between no hold and the given one-way hold, so both sides share
 * the machine's noise. Each delivery is cut at the chunks into: the lead's client sending, the
 * controller before its Deliver call (admission statement), the agent (proofs, gate, mailbox
 * write), the spread of the agent's answer from its first chunk to its last (Node sends gRPC's
 * trailers one loop turn after the message; issue 17's seventh pass), the controller
 * after the verdict (settle statement, the answer), and the client reading it. Prints and
 * writes each phase's p50 per side and the difference. `--gap-ms` idles that long before each
 * delivery, as the bench's peer section does (its SSH delivery comes in between). `--cli` runs another build's controller
 * and agent (the tool stays this one), to compare two builds run after each other. `--windows FILE`
 * writes each delivery's start and end on CLOCK_MONOTONIC (the clock `perf sched record -k
 * CLOCK_MONOTONIC` stamps), for bench/sched-windows.ts.
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

/** A chunk's arrival at a relay, and when the relay passed it on (later when held, and late as timers are). */
type Mark = { at: number; leg: string; released: number };

/** A relay that notes each chunk's arrival on `leg` + ">" (client to target) or "<", holding each `hold()` ms. */
async function relay(
  host: string,
  port: number,
  leg: string,
  marks: { list: Mark[] | undefined },
  hold: () => number,
): Promise<{ port: number; close: () => Promise<void>; accepted: () => number }> {
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
    const pipe = (from: Socket, to: Socket, dir: string) => {
      // Chunks leave in the order they came, also when the hold changes between blocks: a chunk
      // sent unheld must not overtake one still held (a PING ack, a WINDOW_UPDATE), which broke
      // the link's TLS records ("bad record mac") and made the deliveries after it fail.
      const queue: { at: number; chunk: Buffer; mark: Mark }[] = [];
      let timer: NodeJS.Timeout | undefined;
      let lastAt = 0;
      const pump = () => {
        timer = undefined;
        const now = performance.now();
        while (queue.length && queue[0]!.at <= now) {
          const q = queue.shift()!;
          q.mark.released = now;
          to.write(q.chunk);
        }
        if (queue.length) timer = setTimeout(pump, queue[0]!.at - now);
      };
      from.on("data", (chunk: Buffer) => {
        const now = performance.now();
        const mark: Mark = { at: now, leg: leg + dir, released: now };
        marks.list?.push(mark);
        lastAt = Math.max(now + hold(), lastAt);
        if (!queue.length && lastAt <= now) return void to.write(chunk);
        queue.push({ at: lastAt, chunk, mark });
        if (!timer) timer = setTimeout(pump, lastAt - now);
      });
    };
    pipe(down, up, ">");
    pipe(up, down, "<");
    down.once("close", () => up.destroy());
    up.once("close", () => down.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  // A server's close waits for its connections to end: the relayed ones are cut first.
  const close = () =>
    new Promise<void>((r) => {
      server.close(() => r());
      sockets.forEach((s) => s.destroy());
    });
  return { port: (server.address() as AddressInfo).port, close, accepted: () => accepted };
}

const PHASES = [
  "client_sending",
  "controller_before_deliver",
  "agent",
  "agent_answer_spread",
  "controller_after_verdict",
  "client_reading",
  "total_minus_held",
  "relay_hold_lateness",
] as const;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      n: { type: "string" },
      "one-way-ms": { type: "string" },
      "gap-ms": { type: "string" },
      cli: { type: "string" },
      out: { type: "string" },
      windows: { type: "string" },
    },
  });
  const n = Number(values.n ?? 400);
  const windows: { from: number; to: number; held: number }[] = [];
  const oneWay = Number(values["one-way-ms"] ?? 25);
  const gapMs = Number(values["gap-ms"] ?? 0);
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
    await lead.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${mcpRelay.port}${mcp.pathname}`), {
        requestInit: { headers: { authorization: `Bearer ${fleet.leadToken}` } },
      }),
    );
    closers.unshift(() => lead.close());
    const seat = fleet.seatIds[0]!;
    let sent = 0;
    const send = () => lead.callTool({ name: "message_seat", arguments: { seat, message: `rtt phases ${++sent}` } });
    for (let i = 0; i < 20; i++) await send();
    const sides = new Map<number, Record<(typeof PHASES)[number], number[]>>();
    for (const d of [0, oneWay])
      sides.set(
        d,
        Object.fromEntries(PHASES.map((p) => [p, []])) as unknown as Record<(typeof PHASES)[number], number[]>,
      );
    let failed = 0;
    const failures: Record<string, number> = {};
    // Which deliveries failed (their index in the run, the first 50), so a run says when they came.
    const failedAt: number[] = [];
    for (let i = 0; i < n; i++) {
      held = Math.floor(i / 10) % 2 ? oneWay : 0;
      if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      marks.list = [];
      const h0 = process.hrtime.bigint();
      const t0 = performance.now();
      const res = await send();
      const t1 = performance.now();
      const h1 = process.hrtime.bigint();
      const list = marks.list;
      marks.list = undefined;
      const first = (leg: string) => list.find((m) => m.leg === leg);
      const last = (leg: string) => list.filter((m) => m.leg === leg).at(-1);
      const [mcpIn, linkOut, agentOut, linkBack, mcpBack] = [
        last("mcp>"),
        first("link<"),
        first("link>"),
        last("link>"),
        last("mcp<"),
      ];
      if (
        (res.structuredContent as { outcome?: string } | undefined)?.outcome !== "delivered" ||
        !mcpIn ||
        !linkOut ||
        !agentOut ||
        !linkBack ||
        !mcpBack
      ) {
        failed++;
        if (failedAt.length < 50) failedAt.push(i);
        // Why, so a run with failures says whether the delivery failed or a relay missed a chunk.
        const body = res.structuredContent as { outcome?: string; reason?: string } | undefined;
        const why =
          body?.outcome !== "delivered"
            ? `${body?.outcome ?? "no body"}: ${body?.reason ?? "no reason"}`
            : "a relay saw no chunk on a leg";
        failures[why] = (failures[why] ?? 0) + 1;
        continue;
      }
      windows.push({ from: Number(h0) / 1e9, to: Number(h1) / 1e9, held });
      const s = sides.get(held)!;
      s.client_sending.push(mcpIn.at - t0);
      s.controller_before_deliver.push(linkOut.at - mcpIn.at);
      // The request reaches the agent when the relay let it go; its verdict leaves at agentOut.
      s.agent.push(agentOut.at - linkOut.released);
      // From the answer's first chunk leaving the agent to its last (the gRPC trailers, when they go apart).
      s.agent_answer_spread.push(linkBack.at - agentOut.at);
      s.controller_after_verdict.push(mcpBack.at - linkBack.released);
      s.client_reading.push(t1 - mcpBack.at);
      // The hold as it was (a timer fires late), not as asked: the relay's lateness is not the path's.
      const heldReally = linkOut.released - linkOut.at + (linkBack.released - linkBack.at);
      s.total_minus_held.push(t1 - t0 - heldReally);
      s.relay_hold_lateness.push(heldReally - 2 * held);
    }
    const p50s = (d: number) => Object.fromEntries(PHASES.map((p) => [p, round(percentile(sides.get(d)![p], 50))]));
    const loop = p50s(0);
    const held50 = p50s(oneWay);
    const result = {
      when: new Date().toISOString(),
      deliveries: n,
      failed,
      failures,
      failed_at: failedAt,
      one_way_ms: oneWay,
      gap_before_each_ms: gapMs,
      p50_ms: { no_hold: loop, [`held_${oneWay}ms_each_way`]: held50 },
      difference_ms: Object.fromEntries(PHASES.map((p) => [p, round(held50[p]! - loop[p]!)])),
      method:
        "alternating blocks of 10 deliveries; phases cut where chunks pass the two relays (MCP leg unheld, agent link held or not); the relays' own hops are in both sides; the held side subtracts the hold each chunk really had (relay_hold_lateness: how much later than asked its timers let them go)",
    };
    writeFileSync(out, JSON.stringify(result, null, 2) + "\n");
    if (values.windows) writeFileSync(values.windows, JSON.stringify(windows) + "\n");
    process.stdout.write(JSON.stringify(result, null, 1) + "\n");
  } finally {
    for (const c of closers) await c().catch(() => {});
    await fleet.close();
    await db.drop();
  }
}

runTool(main);
