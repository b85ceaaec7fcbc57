/** The journal and registry reads behind the scrape-time gauges: a few grouped counts per scrape. */
import { inArray, isNull, sql } from "drizzle-orm";
import { UNRESOLVED_STATES } from "../../shared/verdicts.js";
import type { Db } from "../db/open.js";
import { deliveryReceipts, fences } from "../db/schema.js";
import { revokedMachines } from "../fleet/machine-certs.js";
import type { Registry } from "../nodes/registry.js";
import { AGE_RANGES, type ScrapeSources } from "./fleet-metrics.js";

/** This replica's reverse links as the gauges read them (fleet/reverse-links.ts). */
export interface LinkCounts {
  linkedMachines(): string[];
  has(machine: string): boolean;
  openSockets(): number;
}

export function journalScrapeSources(d: {
  db: Db;
  registry: Registry;
  now: () => Date;
  mcpSessions: () => number;
  links: LinkCounts;
}): ScrapeSources {
  // Three gauges read the agents in one scrape, all at once: they share one read while it runs.
  let agentsRead: ReturnType<ScrapeSources["agents"]> | undefined;
  const readAgents = async () => {
    const [all, revoked] = await Promise.all([d.registry.machines(), revokedMachines(d.db)]);
    const online = all.filter((m) => d.registry.isOnline(m) && d.links.has(m.name));
    return { registered: all.length, online: online.length, revoked: all.filter((m) => revoked.has(m.name)).length };
  };
  return {
    async receiptsByState() {
      const rows = await d.db
        .select({ state: deliveryReceipts.state, n: sql<number>`count(*)::int` })
        .from(deliveryReceipts)
        .groupBy(deliveryReceipts.state);
      return new Map(rows.map((r) => [r.state, r.n]));
    },
    async unresolvedByAge() {
      const now = d.now().getTime();
      // One grouped count per state and age range; the ranges' bounds are computed here so an injected clock holds.
      const bound = (s: number) => new Date(now - s * 1000).toISOString();
      const range = sql<string>`case ${sql.join(
        AGE_RANGES.filter((r) => Number.isFinite(r.maxSeconds)).map(
          (r) => sql`when ${deliveryReceipts.createdAt} > ${bound(r.maxSeconds)}::timestamptz then ${r.label}`,
        ),
        sql` `,
      )} else ${AGE_RANGES.at(-1)!.label} end`;
      const rows = await d.db
        .select({ state: deliveryReceipts.state, age: range, n: sql<number>`count(*)::int` })
        .from(deliveryReceipts)
        .where(inArray(deliveryReceipts.state, [...UNRESOLVED_STATES]))
        // Positional: the age expression carries parameters, which PostgreSQL would not match as the same expression twice.
        .groupBy(sql`1`, sql`2`);
      return rows.map((r) => ({
        state: r.state,
        age: AGE_RANGES.find((x) => x.label === r.age)?.label ?? "over_1d",
        count: r.n,
      }));
    },
    async fencesOpen() {
      const [row] = await d.db.select({ n: sql<number>`count(*)::int` }).from(fences).where(isNull(fences.resolvedAt));
      return row?.n ?? 0;
    },
    agents() {
      agentsRead ??= readAgents().finally(() => (agentsRead = undefined));
      return agentsRead;
    },
    mcpSessions: d.mcpSessions,
    links: () => ({ agents: d.links.linkedMachines().length, sockets: d.links.openSockets() }),
  };
}
