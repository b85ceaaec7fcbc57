/**
 * `node dist/bench/micro-idle-penalty.js [--n 60] [--pauses 25,475] [--hot-ms 150] [--out FILE]`: how much
 * slower this machine runs the same work right after an idle spell, with no product code in it
 * (issue 17: what bounds `peer.rtt50.agent_p50_minus_rtt_ms`, measured). rtt-phases.ts showed a
 * delivery's every phase taking longer when the agent link holds each chunk 25 ms; this asks
 * whether a fixed piece of JavaScript, and a loopback round trip to another process, slow down
 * the same way after the same pause. Three kinds of work, each timed in each condition below, in
 * rotating order so all share the machine's noise:
 * - `js`: parse, walk and re-serialize a JSON-RPC-sized body and look keys up in a 20,000-entry
 *   map (a working set the size of a small server's), about 1 ms on a fast core;
 * - `js_wide`: the same kind of work spread over 600 distinct compiled functions and a 32 MB
 *   heap of objects touched at random, a footprint nearer a server's path through its
 *   libraries (the SDK, zod, postgres.js, HTTP/2) than `js`'s few hot functions;
 * - `ping`: one byte to a child process over loopback TCP (TCP_NODELAY) and back: two wake-ups.
 * 475 ms is the idle spell the bench's peer section puts before each agent delivery at 50 ms
 * RTT (the SSH delivery it alternates with). Every sample follows `--hot-ms` (150) of the same
 * work without a break, then comes at once (`hot`), after a pause, or after 64 MB of other
 * memory was read and written (`after_cache_flush`: what the caches held is lost, with no
 * idle): so an idle spell's cost is told apart from a cold cache's. (The twelfth pass's form
 * compared each pause with samples that followed other samples and pauses, never hot: its
 * "no slower after idle" compared cold with cold. Thirteenth pass.)
 */
import { spawn } from "node:child_process";
import { connect, type Socket } from "node:net";
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { round, summarize } from "./stats.js";
import { runTool } from "./tool-main.js";

const BODY = JSON.stringify({
  jsonrpc: "2.0",
  id: 7,
  method: "tools/call",
  params: {
    name: "message_seat",
    arguments: {
      seat: "machine-a/seat-1",
      text: "x".repeat(600),
      idempotency_key: "k".repeat(36),
      meta: Array.from({ length: 24 }, (_, i) => ({ i, tag: `t${i}` })),
    },
  },
});
const MAP = new Map<string, { n: number; s: string }>(
  Array.from({ length: 20_000 }, (_, i) => [`key-${i}`, { n: i, s: `value-${i}` }]),
);

let sink = 0;
function jsWork(): number {
  const t = performance.now();
  for (let r = 0; r < 40; r++) {
    const o = JSON.parse(BODY) as { params: { arguments: { meta: { i: number; tag: string }[] } } };
    for (const m of o.params.arguments.meta)
      sink += m.tag.length + (MAP.get(`key-${(m.i * 7919 + r * 104_729) % 20_000}`)?.n ?? 0);
    sink += JSON.stringify(o).length;
  }
  return performance.now() - t;
}

// 600 functions, each its own compiled code, and 32 MB of objects: the wide work walks them all.
const WIDE_FUNCTIONS = Array.from(
  { length: 600 },
  (_, i) =>
    new Function(
      "o",
      "k",
      `let s = ${i}; for (const x of o.list) s += (x.n * ${i + 1}) ^ k; return s + o.name.length;`,
    ) as (o: { list: { n: number }[]; name: string }, k: number) => number,
);
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
  const port = await new Promise<number>((resolve) =>
    child.stdout!.once("data", (d: Buffer) => resolve(Number(d.toString().trim()))),
  );
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

// 64 MB read and written: more than any cache this machine's CPUs have, so what the work had cached is gone.
const FLUSH = new Float64Array(8 * 1024 * 1024);
function flushCaches(): void {
  let x = 0;
  for (let i = 0; i < FLUSH.length; i += 8) x += FLUSH[i] = FLUSH[i]! + 1;
  sink = (sink + x) % 1_000_003;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      n: { type: "string" },
      pauses: { type: "string" },
      "hot-ms": { type: "string" },
      out: { type: "string" },
    },
  });
  const n = Number(values.n ?? 60);
  const hotMs = Number(values["hot-ms"] ?? 150);
  const pauses = (values.pauses ?? "25,475").split(",").map(Number);
  const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  const loadBefore = load();
  const echo = await startEcho();
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const labels = ["hot", "after_cache_flush", ...pauses.map((p) => `after_${p}ms_idle`)];
  // Before every sample: the same work without a break for hotMs (its steady state).
  const heat = async (work: () => unknown) => {
    for (const until = performance.now() + hotMs; performance.now() < until; ) await work();
  };
  const js: Record<string, number[]> = Object.fromEntries(labels.map((l) => [l, []]));
  const wide: Record<string, number[]> = Object.fromEntries(labels.map((l) => [l, []]));
  const pings: Record<string, number[]> = Object.fromEntries(labels.map((l) => [l, []]));
  const works: [() => number | Promise<number>, Record<string, number[]>][] = [
    [jsWork, js],
    [jsWideWork, wide],
    [() => ping(echo.sock), pings],
  ];
  try {
    for (let i = 0; i < 30; i++) jsWork(), jsWideWork(), await ping(echo.sock); // warm the JIT and the socket
    for (let i = 0; i < n; i++) {
      // Rotate which condition comes first, so none always follows the same one.
      for (let k = 0; k < labels.length; k++) {
        const label = labels[(i + k) % labels.length]!;
        const pause = label.startsWith("after_") && label.endsWith("ms_idle") ? pauses[labels.indexOf(label) - 2]! : 0;
        for (const [work, samples] of works) {
          await heat(work);
          if (label === "after_cache_flush") flushCaches();
          if (pause > 0) await sleep(pause);
          samples[label]!.push(await work());
        }
      }
    }
  } finally {
    echo.stop();
  }
  const figures = (x: Record<string, number[]>) => {
    const hot = summarize(x.hot!).p50_ms;
    return Object.fromEntries(
      labels.map((l) => [l, { ...summarize(x[l]!), p50_vs_hot: round(summarize(x[l]!).p50_ms / hot) }]),
    );
  };
  const result = {
    at: new Date().toISOString(),
    load_before: loadBefore,
    load_after: load(),
    n,
    js_work: figures(js),
    js_wide_work: figures(wide),
    loopback_ping_to_another_process: figures(pings),
    method:
      "one process; the js work is fixed (JSON parse/walk/stringify of a 1 kB body ×40, 20,000-entry map lookups), the wide work 600 distinct functions over a 32 MB heap ×3; the ping is one byte to a child node process over loopback TCP and back; each sample comes after `hot_ms` of the same work, then at once (hot), after reading and writing 64 MB of other memory (after_cache_flush: the caches lost, no idle) or after a pause; conditions rotate",
    hot_ms: hotMs,
    sink,
  };
  const text = JSON.stringify(result, null, 1);
  console.log(text);
  if (values.out) writeFileSync(values.out, `${text}\n`);
}

runTool(main);
