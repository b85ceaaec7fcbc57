/**
 * The leads of the verification run: each is one conversation on the official MCP client, calling
 * message_seat with its own unique ids and now and then replaying an id it already got an answer for.
 * Every call is recorded invoke → ok | fail | info (history.ts). Used by the single-controller run
 * (run.ts) and the HA run (ha-run.ts), where the MCP URL is the load balancer's.
 */
import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { classify, type Op } from "./history.js";

export interface Lead {
  name: string;
  token: string;
  client?: Client;
}

export async function connectLead(mcpUrl: string, lead: Lead): Promise<Client> {
  const client = new Client({ name: `verify-${lead.name}`, version: "0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(mcpUrl), {
      requestInit: { headers: { authorization: `Bearer ${lead.token}` } },
    }),
  );
  return client;
}

export interface Workload {
  mcpUrl: string;
  ops: number;
  replayEvery: number;
  seatOf: (op: number) => string;
  record: (o: Op) => void;
  /** performance.now() at the run's start: every `atMs` is relative to it. */
  t0: number;
  stopped: () => boolean;
  /** The first op number: a second workload recording into the same history starts past the first's. */
  firstOp?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs every lead until `ops` first calls are issued (or `stopped()`); `issued()` says how many so far. */
export function startLeads(leads: Lead[], w: Workload): { done: Promise<void>; issued: () => number } {
  let issued = 0;
  const replayable = new Map<string, { op: number; deliveryId: string; seat: string; text: string }[]>();

  const callSeat = async (
    lead: Lead,
    deliveryId: string,
    seat: string,
    text: string,
    retried = false,
  ): Promise<{ body?: Record<string, unknown>; error?: string }> => {
    try {
      lead.client ??= await connectLead(w.mcpUrl, lead);
      const res = (await lead.client.callTool(
        { name: "message_seat", arguments: { seat, message: text }, _meta: { "clankie/seat-call": { deliveryId } } },
        undefined,
        { timeout: 20_000 },
      )) as { structuredContent?: Record<string, unknown> };
      return { body: res.structuredContent };
    } catch (e) {
      // The session or the controller is gone: a new session next time.
      const old = lead.client;
      lead.client = undefined;
      void old?.close().catch(() => {});
      const message = (e as Error).message;
      // The client's rule (as `clankie mcp`): a session the replica does not know was refused before
      // admission, so one retry on a new session is safe; never a replay of anything else.
      if (!retried && /unknown_session/.test(message)) return callSeat(lead, deliveryId, seat, text, true);
      return { error: message.slice(0, 200) };
    }
  };

  const leadLoop = async (lead: Lead) => {
    let mine = 0;
    while (!w.stopped()) {
      const candidates = replayable.get(lead.name) ?? [];
      const replay =
        mine > 0 && mine % w.replayEvery === 0 && candidates.length > 0
          ? candidates[Math.floor(Math.random() * candidates.length)]
          : undefined;
      mine++;
      if (replay) {
        const atMs = performance.now() - w.t0;
        w.record({
          type: "invoke",
          op: replay.op,
          lead: lead.name,
          deliveryId: replay.deliveryId,
          seat: replay.seat,
          text: replay.text,
          replayOf: replay.op,
          atMs,
        });
        const r = await callSeat(lead, replay.deliveryId, replay.seat, replay.text);
        const c = classify(r.body, r.error);
        w.record({
          type: c.type,
          op: replay.op,
          lead: lead.name,
          deliveryId: replay.deliveryId,
          seat: replay.seat,
          text: replay.text,
          replayOf: replay.op,
          outcome: c.outcome,
          ...(c.reason ? { reason: c.reason } : {}),
          atMs: performance.now() - w.t0,
        });
        continue;
      }
      if (issued >= w.ops) break;
      const op = (w.firstOp ?? 0) + issued++;
      const deliveryId = randomUUID();
      const seat = w.seatOf(op);
      const text = `verify op ${op} ${deliveryId}`;
      w.record({ type: "invoke", op, lead: lead.name, deliveryId, seat, text, atMs: performance.now() - w.t0 });
      const r = await callSeat(lead, deliveryId, seat, text);
      const c = classify(r.body, r.error);
      w.record({
        type: c.type,
        op,
        lead: lead.name,
        deliveryId,
        seat,
        text,
        outcome: c.outcome,
        ...(c.reason ? { reason: c.reason } : {}),
        atMs: performance.now() - w.t0,
      });
      // Only an answer that names its receipt can be replayed: a refusal before admission left none.
      if (c.type !== "info" && r.body?.deliveryId === deliveryId) {
        const list = replayable.get(lead.name) ?? [];
        list.push({ op, deliveryId, seat, text });
        replayable.set(lead.name, list);
      }
      // While the controller is down, do not spin.
      if (r.error) await sleep(1_000);
    }
  };
  return { done: Promise.all(leads.map(leadLoop)).then(() => {}), issued: () => issued };
}

/** The first answer of each op that was `info`: what the run must reconcile after healing. */
export function firstInfos(history: Op[]): Map<number, Op> {
  const infos = new Map<number, Op>();
  const done = new Set<number>();
  for (const o of history) {
    if (o.type === "invoke" || o.replayOf !== undefined || done.has(o.op)) continue;
    done.add(o.op);
    if (o.type === "info") infos.set(o.op, o);
  }
  return infos;
}

/** The report's tally of first answers by type, outcome and reason, most frequent first. */
export function outcomeTally(history: Op[]): Record<string, number> {
  const acc: Record<string, number> = {};
  for (const o of history) {
    if (o.type === "invoke" || o.replayOf !== undefined) continue;
    const k = `${o.type}:${o.outcome}${o.reason ? `/${o.reason}` : ""}`;
    acc[k] = (acc[k] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(acc).sort((a, b) => b[1] - a[1]));
}
