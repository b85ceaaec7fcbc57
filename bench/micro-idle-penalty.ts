/**
 * `node dist/bench/micro-idle-penalty.js [--n 300] [--pauses 25,475] [--out FILE]`: how much
 * slower this machine runs the same work right after an idle spell, with no product code in it
 * (issue 17: what bounds `peer.rtt50.agent_p50_minus_rtt_ms`, measured). rtt-phases.ts showed a
 * delivery's every phase taking longer when the agent link holds each chunk 25 ms; this asks
 * whether a fixed piece of JavaScript, and a loopback round trip to another process, slow down
 * the same way after the same pause. Two kinds of work, each timed back to back and after each
 * pause, in rotating order so all share the machine's noise:
 * - `js`: parse, walk and re-serialize a JSON-RPC-sized body and look keys up in a 20,000-entry
 *   map (a working set the size of a small server's), about 1 ms on a fast core;
 * - `js_wide`: the same kind of work spread over 600 distinct compiled functions and a 32 MB
 *   heap of objects touched at random, a footprint nearer a server's path through its
 *   libraries (the SDK, zod, postgres.js, HTTP/2) than `js`'s few hot functions;
 * - `ping`: one byte to a child process over loopback TCP (TCP_NODELAY) and back: two wake-ups.
 * 475 ms is the idle spell the bench's peer section puts before each agent delivery at 50 ms
 * RTT (the SSH delivery it alternates with).
 */
import { spawn } from "node:child_process";
import { createServer, connect, type AddressInfo, type Socket } from "node:net";
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { round, summarize } from "./stats.js";
import { runTool } from "./tool-main.js";

const BODY = JSON.stringify({
  jsonrpc: "2.0",
  id: 7,
  method: "tools/call",
  params: { name: "message_seat", arguments: { seat: "machine-a/seat-1", text: "x".repeat(600), idempotency_key: "k".repeat(36), meta: Array.from({ length: 24 }, (_, i) => ({ i, tag: `t${i}` })) } },
});
const MAP = new Map<string, { n: number; s: string }>(Array.from({ length: 20_000 }, (_, i) => [`key-${i}`, { n: i, s: `value-${i}` }]));

let sink = 0;
function jsWork(): number {
  const t = performance.now();
  for (let r = 0; r < 40; r++) {
    const o = JSON.parse(BODY) as { params: { arguments: { meta: { i: number; tag: string }[] } } };
    for (const m of o.params.arguments.meta) sink += m.tag.length + (MAP.get(`key-${(m.i * 7919 + r * 104_729) % 20_000}`)?.n ?? 0);
    sink += JSON.stringify(o).length;
  }
  return performance.now() - t;
}

// 600 functions, each its own compiled code, and 32 MB of objects: the wide work walks them all.
const WIDE_FUNCTIONS = Array.from({ length: 600 }, (_, i) => new Function("o", "k", `let s = ${i}; for (const x of o.list) s += (x.n * ${i + 1}) ^ k; return s + o.name.length;`) as (o: { list: { n: number }[]; name: string }, k: number) => number);
const WIDE_HEAP = Array.from({ length: 400_000 }, (_, i) => ({ list: [{ n: i }, { n: i + 1 }], name: `object-${i}` }));
function jsWideWork(): number {
  const t = performance.now();
  for (let r = 0; r < 3; r++) {
    for (let f = 0; f < WIDE_FUNCTIONS.length; f++) {
      const o = WIDE_HEAP[(f * 7919 + r * 104_729 + sink) % WIDE_HEAP.length]!;
      sink = (sink + WIDE_FUNCTIONS[f]!(o, r)) % 1_000_003;
    }
  }
  return performance.now() - t;
}

/** A child that echoes each byte back; its pid and port come back on stdout. */
async function startEcho(): Promise<{ sock: Socket; stop: () => void }> {
  const code = `const s=require("node:net").createServer(c=>{c.setNoDelay(true);c.on("data",d=>c.write(d))});s.listen(0,"127.0.0.1",()=>console.log(s.address().port))`;
  const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve) => child.stdout!.once("data", (d: Buffer) => resolve(Number(d.toString().trim()))));
  const sock = connect({ host: "127.0.0.1", port });
  sock.setNoDelay(true);
  await new Promise<void>((r) => sock.once("connect", () => r()));
  return { sock, stop: () => (sock.destroy(), child.kill()) };
}

function ping(sock: Socket): Promise<number> {
  const t = performance.now();
  return new Promise((resolve) => {
    sock.once("data", () => resolve(performance.now() - t));
    sock.write("x");
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { n: { type: "string" }, pauses: { type: "string" }, out: { type: "string" } } });
  const n = Number(values.n ?? 300);
  const pauses = (values.pauses ?? "25,475").split(",").map(Number);
  const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  const loadBefore = load();
  const echo = await startEcho();
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const labels = ["busy", ...pauses.map((p) => `after_${p}ms_idle`)];
  const js: Record<string, number[]> = Object.fromEntries(labels.map((l) => [l, []]));
  const wide: Record<string, number[]> = Object.fromEntries(labels.map((l) => [l, []]));
  const pings: Record<string, number[]> = Object.fromEntries(labels.map((l) => [l, []]));
  try {
    for (let i = 0; i < 30; i++) (jsWork(), jsWideWork(), await ping(echo.sock)); // warm the JIT and the socket
    for (let i = 0; i < n; i++) {
      // Rotate which pause comes first, so no pause always follows the same one.
      for (let k = 0; k < labels.length; k++) {
        const label = labels[(i + k) % labels.length]!;
        const pause = label === "busy" ? 0 : pauses[labels.indexOf(label) - 1]!;
        if (pause > 0) await sleep(pause);
        js[label]!.push(jsWork());
        if (pause > 0) await sleep(pause);
        wide[label]!.push(jsWideWork());
        // The busy sample comes right after the js work; each paused one after its own pause.
        if (pause > 0) await sleep(pause);
        pings[label]!.push(await ping(echo.sock));
      }
    }
  } finally {
    echo.stop();
  }
  const figures = (x: Record<string, number[]>) => {
    const base = summarize(x.busy!).p50_ms;
    return Object.fromEntries(labels.map((l) => [l, { ...summarize(x[l]!), p50_vs_busy: round(summarize(x[l]!).p50_ms / base) }]));
  };
  const result = {
    at: new Date().toISOString(),
    load_before: loadBefore,
    load_after: load(),
    n,
    js_work: figures(js),
    js_wide_work: figures(wide),
    loopback_ping_to_another_process: figures(pings),
    method: "one process; the js work is fixed (JSON parse/walk/stringify of a 1 kB body ×40, 20,000-entry map lookups), the wide work 600 distinct functions over a 32 MB heap ×3; the ping is one byte to a child node process over loopback TCP and back; samples rotate between back to back and each pause",
    sink,
  };
  const text = JSON.stringify(result, null, 1);
  console.log(text);
  if (values.out) writeFileSync(values.out, `${text}\n`);
}

runTool(main);
