/**
 * GET /metrics with real processes (`clankie up`: controller + agent process), parsed by a
 * Prometheus text-format parser: names follow clankie_<subsystem>_<name>_<unit> (counters
 * _total, durations _seconds histograms), no label carries an id or a text, the owner token is
 * required, and the numbers move with real deliveries: one delivered, one unknown seat, one
 * uncertain (agent frozen) that leaves an open fence and an unresolved receipt under a minute old.
 * Issue 37 item 4: prom-client's process metrics, clankie_build_info, the journal's statement
 * time, the agent calls' duration, linked agents and reverse links per replica, hires by outcome.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import parsePrometheus, { type ParsedFamily } from "parse-prometheus-text-format";
import { prepareStore } from "../kit/test-db.js";
import { childPids, runCli, startUp, type UpProcess } from "../kit/cli.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { readToken } from "../../controller/state-dir.js";
import { AGE_RANGES } from "../../controller/metrics/fleet-metrics.js";

const NAME = /^clankie_[a-z0-9]+_[a-z0-9_]+$/;
// A unit, or a plain count of things (a gauge named by what it counts).
const UNIT_OR_COUNT =
  /(_total|_seconds|_receipts|_open|_connected|_registered|_revoked|_sessions|_linked|_links|_info)$/;
// Every clankie_* family; the rest are prom-client's standard process_* and nodejs_* ones.
const CLANKIE_FAMILIES = [
  "clankie_agent_call_seconds",
  "clankie_build_info",
  "clankie_delivery_deliveries_total",
  "clankie_delivery_latency_seconds",
  "clankie_delivery_proof_age_at_write_seconds",
  "clankie_fleet_agents_connected",
  "clankie_fleet_agents_linked",
  "clankie_fleet_agents_registered",
  "clankie_fleet_agents_revoked",
  "clankie_fleet_reverse_links",
  "clankie_hire_hires_total",
  "clankie_journal_errors_total",
  "clankie_journal_fences_open",
  "clankie_journal_receipts",
  "clankie_journal_statement_seconds",
  "clankie_journal_unresolved_receipts",
  "clankie_mcp_sessions",
];

describe("Prometheus /metrics (real processes)", () => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let up: UpProcess;
  let lead: LeadClient;
  let agentPid: number;
  let metricsUrl: string;
  let ownerToken: string;

  // The text of the last scrape: labelled histograms are read from it (see count below).
  const texts = new WeakMap<Map<string, ParsedFamily>, string>();
  const scrape = async (): Promise<Map<string, ParsedFamily>> => {
    const res = await fetch(metricsUrl, { headers: { authorization: `Bearer ${ownerToken}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    const text = await res.text();
    const m = new Map(parsePrometheus(text).map((f) => [f.name, f]));
    texts.set(m, text);
    return m;
  };
  /**
   * A labelled histogram's `_count` or `_sum` for the label sets that match, added up (0 when
   * none yet). Read from the text: the parser merges a histogram's label sets into one.
   */
  type Labels = Record<string, string>;
  type Scrape = Map<string, ParsedFamily>;
  const series = (m: Scrape, name: string, labels: Labels, part: "count" | "sum" = "count"): number => {
    if (!m.has(name)) throw new Error(`no metric ${name}`);
    let total = 0;
    for (const line of texts.get(m)!.split("\n")) {
      const hit = new RegExp(`^${name}_${part}\\{(.*)\\} (\\S+)$`).exec(line);
      if (!hit) continue;
      const got = Object.fromEntries([...hit[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]));
      const matches = ([k, v]: [string, string]) => (v.startsWith("!") ? got[k] !== v.slice(1) : got[k] === v);
      if (Object.entries(labels).every(matches)) total += Number(hit[2]);
    }
    return total;
  };
  const count = (m: Map<string, ParsedFamily>, name: string, labels: Record<string, string>) => series(m, name, labels);
  const value = (m: Map<string, ParsedFamily>, name: string, labels: Record<string, string> = {}): number => {
    const f = m.get(name);
    if (!f) throw new Error(`no metric ${name}`);
    const s = f.metrics.find((x) => Object.entries(labels).every(([k, v]) => x.labels?.[k] === v));
    return s ? Number(s.value ?? s.count) : 0;
  };

  beforeAll(async () => {
    store = await prepareStore("pglite");
    up = await startUp(
      ["--state-dir", store.stateDir, "--port", "0", "--machine", "metrics", "--deliver-timeout-ms", "2000"],
      { DATABASE_URL: "" },
    );
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

  it("clankie families are clankie_<subsystem>_<name>_<unit>: counters _total, durations _seconds", async () => {
    const m = await scrape();
    const ours = [...m.keys()].filter((n) => n.startsWith("clankie_")).sort();
    expect(ours).toEqual(CLANKIE_FAMILIES);
    for (const f of m.values()) {
      if (!f.name.startsWith("clankie_")) continue;
      expect(f.name, f.name).toMatch(NAME);
      expect(f.name, f.name).toMatch(UNIT_OR_COUNT);
      if (f.type === "COUNTER") expect(f.name).toMatch(/_total$/);
      if (f.type === "HISTOGRAM") expect(f.name).toMatch(/_seconds$/);
      expect(f.help.length, `${f.name} has help`).toBeGreaterThan(0);
    }
    // Anything else is prom-client's own process_* / nodejs_* family (issue 37 item 4).
    for (const name of m.keys()) expect(name, name).toMatch(/^(clankie|process|nodejs)_/);
    expect(m.get("clankie_delivery_latency_seconds")!.type).toBe("HISTOGRAM");
    expect(value(m, "clankie_fleet_agents_connected")).toBe(1);
    expect(value(m, "clankie_mcp_sessions")).toBeGreaterThanOrEqual(1);
    expect(value(m, "clankie_journal_errors_total", { stage: "settle" })).toBe(0);
  });

  it("issue 37 item 4: process metrics (memory, CPU, fds, event-loop lag), build info, links per replica", async () => {
    const first = await scrape();
    expect(value(first, "process_resident_memory_bytes")).toBeGreaterThan(10e6);
    expect(value(first, "process_open_fds")).toBeGreaterThan(0);
    expect(first.get("nodejs_eventloop_lag_seconds")?.type).toBe("GAUGE");
    expect(first.get("nodejs_eventloop_lag_p99_seconds")?.type).toBe("GAUGE");
    const cpu = value(first, "process_cpu_seconds_total");
    expect(cpu).toBeGreaterThan(0);
    // The controller works between scrapes (at least the scrape itself), so its CPU counter moves.
    await lead.call("list_seats", {});
    expect(value(await scrape(), "process_cpu_seconds_total")).toBeGreaterThan(cpu);

    const info = first.get("clankie_build_info")!.metrics;
    expect(info).toHaveLength(1);
    const root = new URL("../..", import.meta.url).pathname;
    const head = execFileSync("git", ["rev-parse", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
    expect(info[0]!.labels).toEqual({ version: "0.1.0", node_version: process.version, commit: head });
    expect(Number(info[0]!.value)).toBe(1);

    // One agent, one reverse link, labelled by this replica's instance id.
    const linked = first.get("clankie_fleet_agents_linked")!.metrics;
    expect(linked).toHaveLength(1);
    expect(linked[0]!.labels?.replica).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(linked[0]!.value)).toBe(1);
    const links = first.get("clankie_fleet_reverse_links")!.metrics;
    expect(links[0]!.labels?.replica).toBe(linked[0]!.labels?.replica);
    expect(Number(links[0]!.value)).toBeGreaterThanOrEqual(1);
    expect(value(first, "clankie_hire_hires_total", { outcome: "spawned" })).toBe(0);
  });

  it("deliveries, latency, proof age, fences and unresolved receipts move with real deliveries; no label is an id or a text", async () => {
    const before = await scrape();
    expect(
      (await runCli(["seat", "add", "mailbox", "inbox", "--state-dir", store.stateDir], { DATABASE_URL: "" })).code,
    ).toBe(0);
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
    expect(
      value(m, "clankie_journal_receipts", { state: "not_sent" }) +
        value(m, "clankie_journal_receipts", { state: "rejected" }),
    ).toBe(refusals);

    // The journal's statements were timed: each delivery admitted and settled (issue 37 item 4).
    const timed = "clankie_journal_statement_seconds";
    const statements = (statement: string) => count(m, timed, { statement }) - count(before, timed, { statement });
    // A seat named by id is admitted by `admit`, one named by a bare name by `admit_by_name` (ADR 0013).
    expect(statements("admit") + statements("admit_by_name")).toBeGreaterThanOrEqual(2 + refusals);
    expect(statements("settle")).toBeGreaterThanOrEqual(1);
    // The agent calls were timed: the delivered one answered ok, the frozen one did not.
    const calls = "clankie_agent_call_seconds";
    expect(count(m, calls, { method: "Deliver", code: "ok" })).toBeGreaterThanOrEqual(1 + refusals);
    // "!ok": any code but ok. The frozen agent's call waited out the 2 s deliver timeout.
    expect(count(m, calls, { method: "Deliver", code: "!ok" })).toBe(1);
    expect(series(m, calls, { method: "Deliver", code: "!ok" }, "sum")).toBeGreaterThanOrEqual(1.5);

    const ids = [delivered.structuredContent!.deliveryId, uncertain.structuredContent!.deliveryId].map(String);
    for (const f of m.values()) {
      for (const s of f.metrics) {
        for (const [k, v] of Object.entries(s.labels ?? {})) {
          expect(
            ids.some((id) => v.includes(id)),
            `${f.name}{${k}} carries an id`,
          ).toBe(false);
          expect(v, `${f.name}{${k}}`).not.toMatch(/metrics:|inbox|nobody-here/);
          // Build info names its commit in full, as Prometheus's own *_build_info{revision} does.
          if (f.name !== "clankie_build_info") expect(v.length, `${f.name}{${k}} is a short word`).toBeLessThan(40);
        }
      }
    }
  });

  it("issue 37 item 4: hires are counted by outcome", async () => {
    const before = await scrape();
    expect(value(before, "clankie_hire_hires_total", { outcome: "failed" })).toBe(0);
    // A machine nobody registered: refused before any launch, a definite failed.
    const args = { harness: "codex", workingDirectory: "/tmp", title: "metrics", role: "count me", machine: "nowhere" };
    const res = await lead.call("hire_agent", args);
    expect(res.structuredContent).toMatchObject({ outcome: "failed", reason: "unknown_machine" });
    const after = await scrape();
    expect(value(after, "clankie_hire_hires_total", { outcome: "failed" })).toBe(1);
    expect(value(after, "clankie_hire_hires_total", { outcome: "spawned" })).toBe(0);
    expect(value(after, "clankie_hire_hires_total", { outcome: "uncertain" })).toBe(0);
  });

  it("issue 37 item 4: the alert rules and scrape config in operations.md name only what is served", async () => {
    const doc = readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8");
    const rules = /```yaml\n(groups:[\s\S]*?)```/.exec(doc)![1]!;
    const config = /```yaml\n(scrape_configs:[\s\S]*?)```/.exec(doc)![1]!;
    expect(config).toContain(`metrics_path: ${new URL(metricsUrl).pathname}\n`);
    const job = /job_name: (\S+)/.exec(config)![1]!;
    // After the deliveries above, the unresolved gauge has its uncertain series: every family shows its labels.
    const m = await scrape();
    const text = texts.get(m)!;
    const exprs = [...rules.matchAll(/expr: (?:>\n)?([\s\S]*?)\n\s+for:/g)].map((x) => x[1]!.replace(/\s+/g, " "));
    expect(exprs.length).toBeGreaterThanOrEqual(4);
    for (const expr of exprs) {
      for (const [, raw, matchers = ""] of expr.matchAll(/\b((?:clankie|up)\w*)(?:\{([^}]*)\})?/g)) {
        if (raw === "up") {
          expect(matchers, expr).toBe(`job="${job}"`);
          continue;
        }
        // A histogram is named in PromQL by its _bucket, _count or _sum series.
        const name = m.has(raw!) ? raw! : raw!.replace(/_(bucket|count|sum)$/, "");
        expect(m.has(name), `${raw} in ${expr}`).toBe(true);
        const served = new Set(
          [...text.matchAll(new RegExp(`^${name}(?:_bucket|_count|_sum)?\\{(.*)\\}`, "gm"))].flatMap((x) =>
            [...x[1]!.matchAll(/(\w+)="/g)].map((l) => l[1]!),
          ),
        );
        for (const [, label, op, want] of matchers.matchAll(/(\w+)(=~|=)"([^"]*)"/g)) {
          expect(served.has(label!), `${name}{${label}} in ${expr}`).toBe(true);
          if (label === "age") for (const v of want!.split("|")) expect(AGE_RANGES.map((r) => r.label)).toContain(v);
          if (label === "state") expect(text, `${name}{state="${want}"}`).toContain(`${name}{state="${want}"`);
          expect(op).toMatch(/^=~?$/);
        }
      }
    }
  });

  it("issue 37 item 4: GET / leads to the dashboard, probes need no token, other paths say what is here", async () => {
    const get = (path: string) => fetch(new URL(path, up.ready.statusUrl), { redirect: "manual" });
    const root = await get("/");
    expect([root.status, root.headers.get("location")]).toEqual([302, "/dashboard"]);
    expect(await root.text()).toMatch(
      /^the dashboard is at \/dashboard; this port serves \/dashboard, \/mcp, \/metrics/,
    );
    const live = await get("/healthz");
    expect([live.status, await live.json()]).toEqual([200, { status: "ok" }]);
    const ready = await get("/readyz");
    expect([ready.status, (await ready.json()).status]).toEqual([200, "ready"]);
    const nothing = await get("/nothing-here");
    expect(nothing.status).toBe(404);
    expect(await nothing.json()).toEqual({
      code: "not_found",
      message:
        "nothing at /nothing-here; this port serves /dashboard, /mcp, /metrics, /healthz, /readyz and gRPC (Connect)",
    });
  });
});
