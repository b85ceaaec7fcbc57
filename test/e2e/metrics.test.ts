/**
 * GET /metrics with real processes (`clankie up`: controller + agent process), parsed by a
 * Prometheus text-format parser: names follow clankie_<subsystem>_<name>_<unit> (counters
 * _total, durations _seconds histograms), no label carries an id or a text, the owner token is
 * required, and the numbers move with real deliveries: one delivered, one unknown seat, one
 * uncertain (agent frozen) that leaves an open fence and an unresolved receipt under a minute old.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import parsePrometheus, { type ParsedFamily } from "parse-prometheus-text-format";
import { prepareStore } from "../kit/test-db.js";
import { childPids, runCli, startUp, type UpProcess } from "../kit/cli.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { readToken } from "../../controller/state-dir.js";

const NAME = /^clankie_[a-z0-9]+_[a-z0-9_]+$/;
// A unit, or a plain count of things (a gauge named by what it counts).
const UNIT_OR_COUNT = /(_total|_seconds|_receipts|_open|_connected|_registered|_sessions)$/;

describe("Prometheus /metrics (real processes)", () => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let up: UpProcess;
  let lead: LeadClient;
  let agentPid: number;
  let metricsUrl: string;
  let ownerToken: string;

  const scrape = async (): Promise<Map<string, ParsedFamily>> => {
    const res = await fetch(metricsUrl, { headers: { authorization: `Bearer ${ownerToken}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    return new Map(parsePrometheus(await res.text()).map((f) => [f.name, f]));
  };
  const value = (m: Map<string, ParsedFamily>, name: string, labels: Record<string, string> = {}): number => {
    const f = m.get(name);
    if (!f) throw new Error(`no metric ${name}`);
    const s = f.metrics.find((x) => Object.entries(labels).every(([k, v]) => x.labels?.[k] === v));
    return s ? Number(s.value ?? s.count) : 0;
  };

  beforeAll(async () => {
    store = await prepareStore("pglite");
    up = await startUp(["--state-dir", store.stateDir, "--port", "0", "--machine", "metrics", "--deliver-timeout-ms", "2000"], { DATABASE_URL: "" });
    metricsUrl = new URL("/metrics", up.ready.statusUrl).toString();
    ownerToken = readToken(store.stateDir, "owner")!;
    lead = await connectLead(up.ready.mcpUrl, up.ready.token);
    agentPid = childPids(up.child.pid!)[0]!;
  });
  afterAll(async () => {
    await lead?.close();
    if (agentPid) {
      try {
        process.kill(agentPid, "SIGCONT");
      } catch {
        // gone
      }
    }
    await up?.stop();
    await store?.cleanup();
  });

  it("refuses a scrape without the owner token, with a Bearer challenge", async () => {
    const none = await fetch(metricsUrl);
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer /);
    const lead = await fetch(metricsUrl, { headers: { authorization: `Bearer ${up.ready.token}` } });
    expect(lead.status).toBe(401);
  });

  it("every family is named clankie_<subsystem>_<name>_<unit>, counters end in _total, durations are _seconds histograms", async () => {
    const m = await scrape();
    expect(m.size).toBe(10);
    for (const f of m.values()) {
      expect(f.name, f.name).toMatch(NAME);
      expect(f.name, f.name).toMatch(UNIT_OR_COUNT);
      if (f.type === "COUNTER") expect(f.name).toMatch(/_total$/);
      if (f.type === "HISTOGRAM") expect(f.name).toMatch(/_seconds$/);
      expect(f.help.length, `${f.name} has help`).toBeGreaterThan(0);
    }
    for (const required of [
      "clankie_delivery_deliveries_total",
      "clankie_delivery_latency_seconds",
      "clankie_delivery_proof_age_at_write_seconds",
      "clankie_journal_fences_open",
      "clankie_journal_unresolved_receipts",
      "clankie_journal_errors_total",
      "clankie_fleet_agents_connected",
      "clankie_mcp_sessions",
    ]) {
      expect(m.has(required), required).toBe(true);
    }
    expect(m.get("clankie_delivery_latency_seconds")!.type).toBe("HISTOGRAM");
    expect(value(m, "clankie_fleet_agents_connected")).toBe(1);
    expect(value(m, "clankie_mcp_sessions")).toBeGreaterThanOrEqual(1);
    expect(value(m, "clankie_journal_errors_total", { stage: "settle" })).toBe(0);
  });

  it("deliveries, latency, proof age, fences and unresolved receipts move with real deliveries; no label is an id or a text", async () => {
    expect((await runCli(["seat", "add", "mailbox", "inbox", "--state-dir", store.stateDir], { DATABASE_URL: "" })).code).toBe(0);
    // On a loaded machine the agent's freshness gate may refuse (proof_stale, a definite not-sent): ask again, and count those too.
    let delivered = await lead.call("message_seat", { seat: "inbox", message: "metrics: one delivered" });
    let refusals = 0;
    while (delivered.structuredContent?.reason === "proof_stale" && refusals < 5) {
      refusals++;
      delivered = await lead.call("message_seat", { seat: "inbox", message: "metrics: one delivered" });
    }
    expect(delivered.structuredContent).toMatchObject({ outcome: "delivered" });
    const unknown = await lead.call("message_seat", { seat: "nobody-here", message: "metrics: unknown seat" });
    expect(unknown.structuredContent).toMatchObject({ outcome: "unknown_seat" });
    process.kill(agentPid, "SIGSTOP");
    const uncertain = await lead.call("message_seat", { seat: "inbox", message: "metrics: frozen agent" });
    process.kill(agentPid, "SIGCONT");
    expect(uncertain.structuredContent).toMatchObject({ outcome: "uncertain" });

    const m = await scrape();
    expect(value(m, "clankie_delivery_deliveries_total", { outcome: "delivered" })).toBe(1);
    expect(value(m, "clankie_delivery_deliveries_total", { outcome: "unknown_seat" })).toBe(1);
    expect(value(m, "clankie_delivery_deliveries_total", { outcome: "uncertain" })).toBe(1);
    expect(value(m, "clankie_delivery_deliveries_total", { outcome: "undelivered" })).toBe(refusals);
    const latency = m.get("clankie_delivery_latency_seconds")!.metrics[0]!;
    // Every answer; the uncertain one waited out the 2 s deliver timeout, so it cannot be in the 1 s bucket.
    expect(Number(latency.count)).toBe(3 + refusals);
    expect(Number(latency.buckets!["1"])).toBeLessThanOrEqual(2 + refusals);
    expect(Number(latency.buckets!["+Inf"])).toBe(3 + refusals);
    expect(Number(latency.sum)).toBeGreaterThanOrEqual(2);
    expect(Number(m.get("clankie_delivery_proof_age_at_write_seconds")!.metrics[0]!.count)).toBe(1);
    expect(value(m, "clankie_journal_fences_open")).toBe(1);
    expect(value(m, "clankie_journal_unresolved_receipts", { state: "uncertain", age: "under_1m" })).toBe(1);
    expect(value(m, "clankie_journal_receipts", { state: "delivered" })).toBe(1);
    expect(value(m, "clankie_journal_receipts", { state: "not_sent" }) + value(m, "clankie_journal_receipts", { state: "rejected" })).toBe(refusals);

    const ids = [delivered.structuredContent!.deliveryId, uncertain.structuredContent!.deliveryId].map(String);
    for (const f of m.values()) {
      for (const s of f.metrics) {
        for (const [k, v] of Object.entries(s.labels ?? {})) {
          expect(ids.some((id) => v.includes(id)), `${f.name}{${k}} carries an id`).toBe(false);
          expect(v, `${f.name}{${k}}`).not.toMatch(/metrics:|inbox|nobody-here/);
          expect(v.length, `${f.name}{${k}} is a short word`).toBeLessThan(40);
        }
      }
    }
  });
});
