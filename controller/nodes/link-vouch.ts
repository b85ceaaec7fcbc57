/**
 * A machine is online while it heartbeats through any replica OR any replica holds a live link
 * it answers on (ADR 0038). Heartbeats already go through whichever replica answers; this is
 * the second half. Twice per heartbeat interval, a replica looks at the machines it holds reverse
 * links to whose last heartbeat is late (more than one and a half intervals old: a heartbeat on
 * time never is), asks each a question over its link (an InspectSeat of no seat, which the
 * agent refuses at once without touching a seat), and marks the ones that answered as seen.
 *
 * So an agent whose heartbeats are delayed (the replica it sent them through died, and it has
 * not moved on yet) is not shown offline, and its in-flight deliveries on every replica are not
 * cut (liveness.ts reads the same row). A frozen or vanished agent answers nothing: its row ages
 * as before and rule 55's 10 s holds. A late row is looked at within half an interval and the
 * question takes at most one more second, so it is marked seen before three intervals (offline)
 * have passed. At idle this is one read per replica per half interval that matches nothing; the
 * agents are asked only while their heartbeats are late.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { and, inArray, lt } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { machines } from "../db/schema.js";
import { InspectSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import type { AgentClients } from "./agent-clients.js";
import type { Logger } from "../../shared/logger.js";

/** Codes that only the agent's own service gives: it read the request and answered. */
const ANSWERED = new Set<Code>([
  Code.NotFound,
  Code.InvalidArgument,
  Code.FailedPrecondition,
  Code.Unauthenticated,
  Code.PermissionDenied,
]);

export interface LinkVouchOptions {
  db: Db;
  agents: Pick<AgentClients, "get">;
  /** The machines this replica holds a reverse link to. */
  linked: () => string[];
  /** The interval heartbeats are judged by; it grows with the fleet (registry.judgedIntervalMs). */
  heartbeatIntervalMs: number | (() => number);
  now: () => Date;
  logger: Logger;
}

/** Whether the agent answers on this replica's link within `timeoutMs`. */
export async function answersOnLink(
  agents: Pick<AgentClients, "get">,
  m: { name: string; endpoint: string; agentToken: string },
  timeoutMs: number,
): Promise<boolean> {
  const conn = agents.get(m.name, m.endpoint, m.agentToken);
  try {
    await conn.client.inspectSeat(create(InspectSeatRequestSchema, { seatName: "" }), { timeoutMs });
    return true;
  } catch (e) {
    return e instanceof ConnectError && ANSWERED.has(e.code);
  }
}

/** One pass: the late machines this replica is linked to that answered, now marked seen. */
export async function vouchForLinked(o: LinkVouchOptions): Promise<string[]> {
  const names = o.linked();
  if (names.length === 0) return [];
  const intervalMs = typeof o.heartbeatIntervalMs === "number" ? o.heartbeatIntervalMs : o.heartbeatIntervalMs();
  const late = new Date(o.now().getTime() - intervalMs * 1.5);
  // Only the late rows come back, filtered here by link: asking with every linked name cost a
  // bound parameter per agent each pass (issue 36), and at idle no row is late.
  const linked = new Set(names);
  const rows = (
    await o.db
      .select({ name: machines.name, endpoint: machines.endpoint, agentToken: machines.agentToken })
      .from(machines)
      .where(lt(machines.lastSeenAt, late))
  ).filter((m) => linked.has(m.name));
  if (rows.length === 0) return [];
  const timeoutMs = Math.max(200, Math.min(1000, intervalMs / 2));
  const answered = (
    await Promise.all(rows.map(async (m) => ((await answersOnLink(o.agents, m, timeoutMs)) ? m.name : undefined)))
  ).filter((n): n is string => !!n);
  if (answered.length === 0) return [];
  // Only rows still late: a heartbeat that arrived meanwhile is newer than this answer.
  await o.db
    .update(machines)
    .set({ lastSeenAt: o.now() })
    .where(and(inArray(machines.name, answered), lt(machines.lastSeenAt, late)));
  o.logger.info("machines answering on this replica's links are kept online while their heartbeats are late", {
    machines: answered,
  });
  return answered;
}

/** A pass at least this often: a fleet that shrank is told a short interval again at its next heartbeat. */
const VOUCH_EVERY_MAX_MS = 5_000;

/**
 * Runs `vouchForLinked` twice per heartbeat interval (at most every 5 s) until stopped, the interval
 * read again at each pass: it grows with the fleet (issue 36: the pass ran every second at 1,000 agents,
 * at the interval the controller started with).
 */
export function startLinkVouch(o: LinkVouchOptions): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const halfInterval = () =>
    Math.min(
      VOUCH_EVERY_MAX_MS,
      (typeof o.heartbeatIntervalMs === "number" ? o.heartbeatIntervalMs : o.heartbeatIntervalMs()) / 2,
    );
  const next = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      vouchForLinked(o)
        .catch((e: Error) => o.logger.warn("link liveness pass failed", { error: e.message }))
        .finally(next);
    }, halfInterval());
    timer.unref();
  };
  next();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
