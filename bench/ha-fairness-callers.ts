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
 * A session is opened by the MCP SDK's client (initialize, the session id, the protocol version); the timed
 * calls are the same HTTP request a lead's client sends (POST of a JSON-RPC `tools/call`, its session and
 * protocol headers, one kept-alive connection per caller), sent and read with node:http. With the SDK's
 * client for every call this process used 0.39 of the box's 2 cores during the timed part, more than either
 * replica (0.19, 0.25): leads run on their own machines, and their client's CPU here is taken from the
 * replicas', the agent's and the database's, and timed as waits.
 */
import { randomUUID } from "node:crypto";
import { Agent, request } from "node:http";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
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

/** One caller's open session: its `tools/call` requests go out on one kept-alive connection. */
interface Session {
  url: URL;
  headers: Record<string, string>;
  agent: Agent;
  next: number;
}

async function openSession(c: FairCaller): Promise<Session> {
  c.lead.client = await connectLead(c.mcpUrl, c.lead);
  const t = c.lead.client.transport as StreamableHTTPClientTransport;
  if (!t.sessionId) throw new Error("the MCP server gave no session id");
  return {
    url: new URL(c.mcpUrl),
    headers: {
      authorization: `Bearer ${c.lead.token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": t.sessionId,
      ...(t.protocolVersion ? { "mcp-protocol-version": t.protocolVersion } : {}),
    },
    agent: new Agent({ keepAlive: true, maxSockets: 1 }),
    next: 1,
  };
}

/** message_seat as a JSON-RPC `tools/call`; rejects on an HTTP or JSON-RPC error, as the SDK's callTool does. */
function messageSeat(s: Session, seat: string, message: string, deliveryId: string): Promise<void> {
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: s.next++,
    method: "tools/call",
    params: { name: "message_seat", arguments: { seat, message }, _meta: { "clankie/seat-call": { deliveryId } } },
  });
  return new Promise((resolve, reject) => {
    const req = request(s.url, { method: "POST", headers: s.headers, agent: s.agent, timeout: 60_000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => void (text += d));
      res.on("end", () => {
        if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`));
        const answer = JSON.parse(text) as { error?: { message: string } };
        if (answer.error) reject(new Error(answer.error.message));
        else resolve();
      });
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error("no answer in 60 s")));
    req.on("error", reject);
    req.end(body);
  });
}

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
  const sessions: (Session | undefined)[] = [];
  for (const c of callers) sessions.push(await openSession(c));
  process.send?.({ ready: true } satisfies FairCallersAnswer);
  await go;
  const calls: FairCall[] = [];
  let errors = 0;
  const loop = watchEventLoop();
  await Promise.all(
    callers.map(async (c, i) => {
      for (let k = 0; k < callsEach; k++) {
        try {
          // A session lost to an error is opened again before the clock starts: the wait is the call's alone.
          const s = (sessions[i] ??= await openSession(c));
          const id = randomUUID();
          const t = performance.now();
          await messageSeat(s, seat, `fair ${i} ${k}`, id);
          calls.push({ caller: i, call: k, id, startedAt: performance.timeOrigin + t, ms: performance.now() - t });
        } catch {
          errors++;
          sessions[i]?.agent.destroy();
          sessions[i] = undefined;
          await c.lead.client?.close().catch(() => {});
        }
      }
    }),
  );
  const loopStallMs = loop.stop();
  for (const s of sessions) s?.agent.destroy();
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
