/**
 * The fairness measurement's callers, in a process of their own (sections/ha-fairness.ts forks it), as a
 * team's leads are: the run's own process holds the whole HA run's history, and its garbage collections
 * (8–28 ms, every few hundred ms after the kill and failover parts) were timed as the waits of every call
 * in flight. Here the callers' clocks share an event loop with nothing but the callers.
 *
 * Every session is open before the first call and stays open until the last caller is done: a caller that
 * finished early and closed its session (an MCP DELETE, a journal row removed) did that work while the
 * others were still timed. The parent says "go"; the answer is every call's time and the loop's worst stall.
 */
import { randomUUID } from "node:crypto";
import { connectLead, type Lead } from "../verify/leads.js";

export interface FairCaller {
  lead: Lead;
  mcpUrl: string;
}
export interface FairCallersTask {
  seat: string;
  callsEach: number;
  callers: FairCaller[];
}
export interface FairCall {
  caller: number;
  call: number;
  id: string;
  /** performance.timeOrigin-based epoch ms, as the journal's and the agent's clocks on this host. */
  startedAt: number;
  ms: number;
}
export type FairCallersAnswer =
  | { ready: true }
  | { calls: FairCall[]; errors: number; loopStallMs: number }
  | { failed: string };

const LAG_TICK_MS = 10;

/** The longest gap between ticks of a LAG_TICK_MS timer, less the tick, until `stop()`. */
function watchEventLoop(): { stop(): number } {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - LAG_TICK_MS);
    last = now;
  }, LAG_TICK_MS);
  return {
    stop: () => {
      clearInterval(timer);
      return worst;
    },
  };
}

async function run(task: FairCallersTask, go: Promise<void>): Promise<FairCallersAnswer> {
  const { callers, seat, callsEach } = task;
  for (const c of callers) c.lead.client = await connectLead(c.mcpUrl, c.lead);
  process.send?.({ ready: true } satisfies FairCallersAnswer);
  await go;
  const calls: FairCall[] = [];
  let errors = 0;
  const loop = watchEventLoop();
  await Promise.all(
    callers.map(async ({ lead, mcpUrl }, i) => {
      for (let k = 0; k < callsEach; k++) {
        try {
          // A session lost to an error is opened again before the clock starts: the wait is the call's alone.
          lead.client ??= await connectLead(mcpUrl, lead);
          const id = randomUUID();
          const t = performance.now();
          await lead.client.callTool(
            {
              name: "message_seat",
              arguments: { seat, message: `fair ${i} ${k}` },
              _meta: { "clankie/seat-call": { deliveryId: id } },
            },
            undefined,
            { timeout: 60_000 },
          );
          calls.push({ caller: i, call: k, id, startedAt: performance.timeOrigin + t, ms: performance.now() - t });
        } catch {
          errors++;
          lead.client = undefined;
        }
      }
    }),
  );
  const loopStallMs = loop.stop();
  await Promise.all(callers.map((c) => c.lead.client?.close().catch(() => {})));
  return { calls, errors, loopStallMs };
}

const task = JSON.parse(process.argv[2]!) as FairCallersTask;
const go = new Promise<void>((resolve) => process.once("message", () => resolve()));
run(task, go).then(
  (a) => process.send?.(a, undefined, undefined, () => process.exit(0)),
  (e: Error) =>
    process.send?.({ failed: e.message } satisfies FairCallersAnswer, undefined, undefined, () => process.exit(1)),
);
