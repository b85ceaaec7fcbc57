/**
 * `node dist/bench/micro-mailbox-session-read.js [--entries 8100] [--rounds 5] [--new 25] [--out FILE]`:
 * what a mailbox seat's session read (a reconcile's ReadSession) costs the agent, side by side in one
 * run: reading every file at once (`store.list`, what ReadSession did) against the session reader
 * (node-agent/mailbox/session-read.ts: a stat per file it parsed before, a read per new or changed
 * file, the loop given back every CHUNK files). 8,100 entries is the mailbox the HA bench leaves.
 *
 * Per round, `--new` entries are appended first (deliveries between two reconciles), then each read
 * runs once, in alternating order. For each: wall ms, CPU ms of this process, and the longest the
 * event loop was held (the largest gap between turns of a setImmediate chain running beside the
 * read: what every other seat of the agent waits). The reader's first read (nothing parsed yet) is
 * reported apart from its later ones.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { MailboxStore } from "../node-agent/mailbox/store.js";
import { MailboxSessionReader } from "../node-agent/mailbox/session-read.js";
import { round, summarize } from "./stats.js";
import { runTool } from "./tool-main.js";

interface Sample {
  wallMs: number;
  cpuMs: number;
  loopHeldMs: number;
}

/** Runs `read` with a setImmediate chain beside it: the longest gap between two of its turns is the loop held. */
async function timed(read: () => unknown): Promise<Sample> {
  let last = performance.now();
  let held = 0;
  let done = false;
  const tick = () => {
    const now = performance.now();
    held = Math.max(held, now - last);
    last = now;
    if (!done) setImmediate(tick);
  };
  setImmediate(tick);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await read();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  done = true;
  tick();
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000, loopHeldMs: held };
}

function figures(samples: Sample[]) {
  const of = (k: keyof Sample) => {
    const s = summarize(samples.map((x) => x[k]));
    return { p50: s.p50_ms, max: s.max_ms };
  };
  return { n: samples.length, wall_ms: of("wallMs"), cpu_ms: of("cpuMs"), loop_held_ms: of("loopHeldMs") };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      entries: { type: "string", default: "8100" },
      rounds: { type: "string", default: "5" },
      new: { type: "string", default: "25" },
      out: { type: "string" },
    },
  });
  const entries = Number(values.entries);
  const rounds = Number(values.rounds);
  const fresh = Number(values.new);
  const root = mkdtempSync(join(tmpdir(), "clankie-mailbox-read-"));
  try {
    const store = new MailboxStore(root);
    store.create("seat");
    const append = (n: number) =>
      Promise.all(
        Array.from({ length: n }, (_, i) =>
          store.append("seat", { deliveryId: randomUUID(), text: `entry ${i} `.repeat(20), conversationId: "bench" }),
        ),
      );
    for (let done = 0; done < entries; done += 500) await append(Math.min(500, entries - done));
    const reader = new MailboxSessionReader(store);
    const first = await timed(() => reader.read("seat"));
    const every: Sample[] = [];
    const later: Sample[] = [];
    for (let r = 0; r < rounds; r++) {
      await append(fresh);
      const pair = [() => timed(() => store.list("seat")), () => timed(() => reader.read("seat"))] as const;
      if (r % 2 === 0) every.push(await pair[0]()), later.push(await pair[1]());
      else later.push(await pair[1]()), every.push(await pair[0]());
    }
    const result = {
      when: new Date().toISOString(),
      entries,
      new_entries_per_round: fresh,
      every_file_at_once: figures(every),
      session_reader_first_read: figures([first]),
      session_reader: figures(later),
      loop_held_ratio_p50: round(figures(every).loop_held_ms.p50 / Math.max(0.001, figures(later).loop_held_ms.p50)),
      cpu_ratio_p50: round(figures(every).cpu_ms.p50 / Math.max(0.001, figures(later).cpu_ms.p50)),
    };
    const text = JSON.stringify(result, null, 1);
    process.stdout.write(`${text}\n`);
    if (values.out) writeFileSync(values.out, `${text}\n`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

runTool(main);
