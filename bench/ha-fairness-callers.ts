/**
 * The fairness measurement's callers, in a process of their own (sections/ha-fairness.ts forks it), as a
 * team's leads are: the run's own process holds the whole HA run's history, and its garbage collections
 * (8–28 ms, every few hundred ms after the kill and failover parts) were timed as the waits of every call
 * in flight. Here the callers' clocks share an event loop with nothing but the callers.
 *
 * Every session is open before the first call and stays open until the last caller is done: a caller that
 * finished early and closed its session (an MCP DELETE, a journal row removed) did that work while the
 * others were still timed. The parent says "go"; the answer is every call's time and the loop's worst stall.
 *
 * The callers are the front-door section's lead (front-door-lead.ts, on node:http): the same requests a lead's
 * client sends. With the MCP SDK's client this process used 0.39 of the box's 2 cores during the timed part,
 * more than either replica (0.19, 0.25): leads run on their own machines, and their client's CPU here is
 * taken from the replicas', the agent's and the database's, and timed as waits.
 */
import { randomUUID } from "node:crypto";
import type { Lead } from "../verify/leads.js";
import { BenchLead } from "./front-door-lead.js";

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
  const leads = callers.map(
    (c) => new BenchLead({ mcpUrl: c.mcpUrl, token: c.lead.token, fresh: false, timeoutMs: 60_000 }),
  );
  for (const l of leads) await l.open();
  process.send?.({ ready: true } satisfies FairCallersAnswer);
  await go;
  const calls: FairCall[] = [];
  let errors = 0;
  const loop = watchEventLoop();
  await Promise.all(
    leads.map(async (lead, i) => {
      for (let k = 0; k < callsEach; k++) {
        // Only a delivered call is a wait; a session the controller dropped is reopened by the lead after its call.
        const id = randomUUID();
        const call = await lead.messageSeat(seat, `fair ${i} ${k}`, id);
        if (call.kind !== "delivered") errors++;
        else
          calls.push({
            caller: i,
            call: k,
            id,
            startedAt: performance.timeOrigin + call.start,
            ms: call.end - call.start,
          });
      }
    }),
  );
  const loopStallMs = loop.stop();
  await Promise.all(leads.map((l) => l.end()));
  return { calls, errors, loopStallMs };
}

const task = JSON.parse(process.argv[2]!) as FairCallersTask;
const go = new Promise<void>((resolve) => process.once("message", () => resolve()));
run(task, go).then(
  (a) => process.send?.(a, undefined, undefined, () => process.exit(0)),
  (e: Error) =>
    process.send?.({ failed: e.message } satisfies FairCallersAnswer, undefined, undefined, () => process.exit(1)),
);
