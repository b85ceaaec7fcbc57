/**
 * Issue 36: a delivery's cost does not grow with the fleet. The admission of a seat named by its id
 * ("machine/name") reads that one seat by its key in PostgreSQL's generic plan, even when 1,000 machines
 * share their seat names: with `id = $1 or name = $1` in one statement the planner expected 1,001 seats,
 * planned every admission anew, and the generic plan it weighed read every seat (taking a second when
 * forced). The plan is read with EXPLAIN on the statement's own text, prepared as the controller prepares
 * it; nothing here is timed.
 */
import postgres from "postgres";
import { PgDialect } from "drizzle-orm/pg-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../controller/db/open.js";
import { admissionSql } from "../../controller/delivery/admit.js";
import { freshPostgres } from "../kit/test-db.js";

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Plan Rows": number;
  Plans?: PlanNode[];
}

const nodesOf = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodesOf)];

describe.runIf(process.env.DATABASE_URL)("issue 36: the admission's plan at 1,000 machines (PostgreSQL)", () => {
  let pg: postgres.Sql;
  let drop: () => Promise<void> = async () => {};

  beforeAll(async () => {
    const fresh = await freshPostgres();
    drop = fresh.drop;
    await (await openDatabase({ url: fresh.url })).close(); // The schema, by the controller's migrations.
    pg = postgres(fresh.url, { max: 1, onnotice: () => {} });
    // The simulator's fleet: 1,000 machines, each with the same 10 seat names.
    await pg.unsafe(`
      insert into machines (name, endpoint, agent_token, instance_id, platform, capability_version, agent_version)
        select 'sim-' || i, 'https://sim', 'token', 'instance', 'linux', 1, '1' from generate_series(0, 999) i;
      insert into seats (id, machine, name, kind, status, occupant_id, input_capabilities)
        select 'sim-' || i || '/seat-' || j, 'sim-' || i, 'seat-' || j, 'mailbox', 'idle', 'occupant', '[]'::jsonb
        from generate_series(0, 999) i, generate_series(0, 9) j;
      analyze`);
  });
  afterAll(async () => {
    await pg?.end();
    await drop();
  });

  const genericPlan = async (by: "id" | "name") => {
    const q = new PgDialect().sqlToQuery(admissionSql(by));
    await pg.unsafe(`prepare admit_${by} as ${q.sql}`);
    await pg.unsafe("set plan_cache_mode = force_generic_plan");
    const nulls = q.params.map(() => "null").join(", ");
    const [row] = await pg.unsafe(`explain (format json) execute admit_${by}(${nulls})`);
    await pg.unsafe("reset plan_cache_mode");
    const plan = (row as unknown as { "QUERY PLAN": { Plan: PlanNode }[] })["QUERY PLAN"][0]!.Plan;
    return nodesOf(plan).filter((n) => n["Relation Name"] === "seats");
  };

  it("by id, the generic plan reads one seat by its key, never every seat", async () => {
    const seats = await genericPlan("id");
    const detail = JSON.stringify(seats.map((n) => [n["Node Type"], n["Plan Rows"]]));
    expect(seats.length, detail).toBeGreaterThan(0);
    for (const n of seats) {
      expect(n["Node Type"], detail).not.toBe("Seq Scan");
      expect(n["Plan Rows"], detail).toBe(1);
    }
  });

  it("by a bare name shared by 1,000 machines, the plan expects them all (the ambiguous path keeps its count)", async () => {
    const seats = await genericPlan("name");
    expect(Math.max(...seats.map((n) => n["Plan Rows"]))).toBeGreaterThanOrEqual(900);
  });
});
