/** The agent URLs of the live controller replicas on this database: an agent links to each. */
import { and, isNotNull, sql } from "drizzle-orm";
import { controllerInstances } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { eq } from "drizzle-orm";

/** A replica is live while it heartbeats (every 5 s); older rows are ignored. */
const LIVE_WITHIN_S = 15;

export async function liveReplicaAgentUrls(db: Db): Promise<string[]> {
  const rows = await db
    .select({ url: controllerInstances.agentUrl })
    .from(controllerInstances)
    .where(
      and(
        isNotNull(controllerInstances.agentUrl),
        sql`${controllerInstances.heartbeatAt} > now() - make_interval(secs => ${LIVE_WITHIN_S})`,
      ),
    );
  return [...new Set(rows.map((r) => r.url!))].sort();
}

/**
 * The same list, read at most once per `maxAgeMs` however many agents ask (every heartbeat and
 * registration answer carries it: one read per heartbeat was 500 reads a second at 1,000 agents).
 * A replica that starts or dies is in the answer within `maxAgeMs`, against the 15 s it takes to
 * count as dead.
 */
export function cachedReplicaAgentUrls(db: Db, maxAgeMs = 2_000): () => Promise<string[]> {
  let read: Promise<string[]> | undefined;
  let at = 0;
  return () => {
    if (!read || performance.now() - at > maxAgeMs) {
      at = performance.now();
      read = liveReplicaAgentUrls(db);
      // A failed read is not kept: the next caller tries again.
      read.catch(() => (read = undefined));
    }
    return read;
  };
}

export async function advertiseAgentUrl(db: Db, instanceId: string, url: string): Promise<void> {
  await db.update(controllerInstances).set({ agentUrl: url }).where(eq(controllerInstances.id, instanceId));
}
