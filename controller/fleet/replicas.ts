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
    .where(and(isNotNull(controllerInstances.agentUrl), sql`${controllerInstances.heartbeatAt} > now() - make_interval(secs => ${LIVE_WITHIN_S})`));
  return [...new Set(rows.map((r) => r.url!))].sort();
}

export async function advertiseAgentUrl(db: Db, instanceId: string, url: string): Promise<void> {
  await db.update(controllerInstances).set({ agentUrl: url }).where(eq(controllerInstances.id, instanceId));
}
