/** The issue's goals judged against a result file, and the readable (Markdown) table the runner prints. */

export interface Goal {
  goal: string;
  target: string;
  measured: string;
  /** null when the figure was not measured (skipped section, or not at the goal's scale), or is only reported. */
  met: boolean | null;
  /** A figure shown beside the goals, not judged (ADR 0046: what it measures is not the goal's). */
  reported?: true;
}

/** The table rows of `goals`, with the header: one table for every runner. */
export function goalRows(goals: Goal[]): string[] {
  const met = (g: Goal) => (g.reported ? "reported" : g.met === null ? "not measured" : g.met ? "yes" : "**no**");
  return [
    "| goal | target | measured | met |",
    "|---|---|---|---|",
    ...goals.map((g) => `| ${g.goal} | ${g.target} | ${g.measured} | ${met(g)} |`),
  ];
}

type Json = Record<string, unknown>;

export function get(o: unknown, path: string): unknown {
  return path.split(".").reduce<unknown>((v, k) => (v && typeof v === "object" ? (v as Json)[k] : undefined), o);
}

export function num(o: unknown, path: string): number | undefined {
  const v = get(o, path);
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

export function judge(
  goal: string,
  target: string,
  value: number | undefined,
  ok: (v: number) => boolean,
  unit = "",
  why?: string,
): Goal {
  if (value === undefined) return { goal, target, measured: why ?? "not measured", met: null };
  return { goal, target, measured: `${value}${unit}`, met: ok(value) };
}

export function judgeGoals(r: Json): Goal[] {
  const added = num(r, "peer.rtt50.added_rtt_ms") ?? 50;
  const receipts = num(r, "memory.receipts");
  const goals = [
    judge("agent path vs SSH, loopback, p50", "≥ 5×", num(r, "peer.ratio_p50"), (v) => v >= 5, "×"),
    judge("agent path vs SSH, 50 ms RTT, p50", "≥ 4×", num(r, "peer.rtt50.ratio_p50"), (v) => v >= 4, "×"),
    judge(
      "agent path at 50 ms RTT, p50",
      `≤ 1 RTT + 15 ms (${added + 15} ms)`,
      num(r, "peer.rtt50.agent.p50_ms"),
      (v) => v <= added + 15,
      " ms",
    ),
    judge(
      "proof age at the write, p99 (mailbox seat, peer path)",
      "≤ 25 ms",
      num(r, "proof_age.p99_ms"),
      (v) => v <= 25,
      " ms",
    ),
    judge(
      "proof age at the write, p99 (real pane proofs, proofs section)",
      "≤ 25 ms",
      num(r, "proofs.proof_age_at_write_ms.p99_ms"),
      (v) => v <= 25,
      " ms",
    ),
    judge(
      "journal, 16 callers, PostgreSQL",
      "≥ 0.8× ceiling",
      num(r, "journal.postgres.c16.ratio"),
      (v) => v >= 0.8,
      "×",
    ),
    judge("MCP message_seat, p50", "≤ 15 ms", num(r, "mcp.p50_ms"), (v) => v <= 15, " ms"),
    judge("dead agent shown offline (rule 55)", "≤ 10 s", num(r, "liveness.offline_detect_s"), (v) => v <= 10, " s"),
    judge(
      "dead agent's in-flight delivery uncertain (rule 55)",
      "≤ 10 s",
      num(r, "liveness.inflight_uncertain_s"),
      (v) => v <= 10,
      " s",
    ),
  ];
  const ctl = num(r, "memory.controller_rss_mb_1m_receipts");
  goals.push(
    receipts !== undefined && receipts < 1_000_000
      ? {
          goal: "controller RSS at 1 M receipts",
          target: "≤ 200 MB",
          measured: `${ctl ?? "?"} MB at ${receipts} receipts (not at 1 M)`,
          met: null,
        }
      : judge("controller RSS at 1 M receipts", "≤ 200 MB", ctl, (v) => v <= 200, " MB"),
  );
  goals.push(judge("idle agent RSS", "≤ 80 MB", num(r, "memory.agent_rss_mb"), (v) => v <= 80, " MB"));
  // Issue 17 (a lean delivery path): CPU per delivery is the noise-proof figure on a shared box.
  goals.push(
    judge(
      "(17) controller CPU per delivery, 1 caller, PostgreSQL",
      "≤ 5 ms",
      num(r, "journal.postgres.c1.controller_cpu_ms_per_delivery"),
      (v) => v <= 5,
      " ms",
    ),
    judge(
      "(17) controller CPU per delivery, 16 callers, PostgreSQL",
      "≤ 2.5 ms",
      num(r, "journal.postgres.c16.controller_cpu_ms_per_delivery"),
      (v) => v <= 2.5,
      " ms",
    ),
    judge(
      "(17) journal, 16 callers, PostgreSQL, against the raw ceiling",
      "≥ 0.25×",
      num(r, "journal.postgres.c16.ratio"),
      (v) => v >= 0.25,
      "×",
    ),
    judge(
      "(17) agent CPU per delivery, 1 caller (aim)",
      "≤ 1.5 ms",
      num(r, "journal.postgres.c1.agent_cpu_ms_per_delivery"),
      (v) => v <= 1.5,
      " ms",
    ),
    judge("(17) SSH ÷ agent path, loopback, p50", "≥ 2×", num(r, "peer.ratio_p50"), (v) => v >= 2, "×"),
    judge("(17) SSH ÷ agent path, 50 ms RTT, p50", "≥ 6×", num(r, "peer.rtt50.ratio_p50"), (v) => v >= 6, "×"),
    judge(
      "(17) agent path at 50 ms RTT minus the measured RTT, p50",
      "≤ 10 ms",
      num(r, "peer.rtt50.agent_p50_minus_rtt_ms"),
      (v) => v <= 10,
      " ms",
    ),
    judge("(17) MCP message_seat on PostgreSQL, p50", "≤ 10 ms", num(r, "mcp.p50_ms"), (v) => v <= 10, " ms"),
    judge(
      "(17) proof age at the write, p99, 16 callers at once",
      "≤ 25 ms",
      num(r, "proof_age.c16.p99_ms"),
      (v) => v <= 25,
      " ms",
    ),
    judge(
      "(17) `clankie up` controller RSS after the deliveries (PGlite)",
      "≤ 200 MB",
      num(r, "memory.up_controller_rss_mb"),
      (v) => v <= 200,
      " MB",
    ),
  );
  return goals;
}

export function cell(v: unknown): string {
  if (v === undefined || v === null) return "—";
  if (typeof v === "string") return v.length > 60 ? v.slice(0, 57) + "…" : v;
  return String(v);
}

function latencyRow(label: string, s: unknown): string {
  if (typeof s === "string") return `| ${label} | ${cell(s)} | | |`;
  return `| ${label} | ${cell(get(s, "p50_ms"))} | ${cell(get(s, "p99_ms"))} | ${cell(get(s, "n"))} |`;
}

export function renderTable(r: Json, goals: Goal[]): string {
  const lines: string[] = [];
  lines.push(
    `Benchmark (${cell(r.mode)}) at ${cell(r.when)}, load average ${cell(get(r, "machine.loadavg_start"))} → ${cell(get(r, "machine.loadavg_end"))}`,
    "",
  );
  lines.push("| latency | p50 ms | p99 ms | n |", "|---|---|---|---|");
  lines.push(latencyRow("peer: agent path, loopback", get(r, "peer.agent")));
  lines.push(latencyRow("peer: legacy SSH path, loopback", get(r, "peer.ssh")));
  lines.push(
    latencyRow("peer: agent's half alone (Deliver straight to the agent), loopback", get(r, "peer.agent_rpc_only")),
  );
  lines.push(
    latencyRow(
      `peer: agent path, loopback, each call after ${cell(get(r, "peer.after_idle.idle_ms"))} ms idle`,
      get(r, "peer.after_idle.agent"),
    ),
  );
  lines.push(latencyRow("peer: agent path, 50 ms RTT", get(r, "peer.rtt50.agent")));
  lines.push(
    latencyRow(
      "peer: agent path, 50 ms RTT, the calls right after an SSH delivery",
      get(r, "peer.rtt50.agent_after_ssh"),
    ),
  );
  lines.push(
    latencyRow(
      "peer: agent path, 50 ms RTT, the calls right after another agent call",
      get(r, "peer.rtt50.agent_after_agent"),
    ),
  );
  lines.push(latencyRow("peer: legacy SSH path, 50 ms RTT", get(r, "peer.rtt50.ssh")));
  lines.push(latencyRow("agent link, mutual TLS, warm connection (Heartbeat)", get(r, "peer.tls_handshake.mtls_warm")));
  lines.push(
    latencyRow(
      "agent link, mutual TLS, fresh connection (TCP + TLS 1.3 + HTTP/2 + call)",
      get(r, "peer.tls_handshake.mtls_fresh"),
    ),
  );
  lines.push(latencyRow("plaintext h2c port, warm connection (Health.Check)", get(r, "peer.tls_handshake.h2c_warm")));
  lines.push(latencyRow("plaintext h2c port, fresh connection", get(r, "peer.tls_handshake.h2c_fresh")));
  lines.push(
    latencyRow(
      `peer: agent's half alone, 50 ms RTT (measured RTT ${cell(get(r, "peer.rtt50.measured_rtt_p50_ms"))} ms)`,
      get(r, "peer.rtt50.agent_rpc_only"),
    ),
  );
  lines.push(latencyRow("proof age at the write (agent, mailbox seat)", get(r, "proof_age")));
  lines.push(
    latencyRow(
      "proof age at the write (legacy SSH: oldest proof when the write starts), loopback",
      get(r, "proof_age.legacy_ssh.loopback"),
    ),
  );
  lines.push(latencyRow("proof age at the write (legacy SSH), 50 ms RTT", get(r, "proof_age.legacy_ssh.rtt50")));
  lines.push(
    latencyRow("proof age at the write (real pane proofs, proofs section)", get(r, "proofs.proof_age_at_write_ms")),
  );
  lines.push(latencyRow("full pane proof (proofs section)", get(r, "proofs.pane_proof_ms")));
  lines.push(latencyRow("MCP message_seat (PostgreSQL)", get(r, "mcp.by_database.postgres")));
  lines.push(latencyRow("MCP message_seat (PGlite, `clankie up` default)", get(r, "mcp.by_database.pglite")));
  lines.push("");
  lines.push(
    `SSH/agent at p50: loopback ${cell(get(r, "peer.ratio_p50"))}×, 50 ms RTT ${cell(get(r, "peer.rtt50.ratio_p50"))}×; ` +
      `the agent's half alone against SSH: loopback ${cell(get(r, "peer.ratio_p50_rpc_only"))}×, 50 ms RTT ${cell(get(r, "peer.rtt50.ratio_p50_rpc_only"))}×; ` +
      `writes refused by the 250 ms gate: ${cell(get(r, "proof_age.refused"))}`,
    "",
  );
  lines.push(
    "| journal | callers | delivered/s | ceiling/s | ratio | agent alone/s | controller CPU ms/delivery | agent CPU ms/delivery | database CPU ms/delivery | leads' clients CPU ms/delivery | cores busy (stolen) |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
  );
  for (const db of ["postgres", "pglite"]) {
    const j = get(r, `journal.${db}`);
    if (typeof j !== "object" || j === null) {
      lines.push(`| ${db} | ${cell(j)} | | | | | | |`);
      continue;
    }
    for (const [k, v] of Object.entries(j as Json)) {
      if (!/^c\d+$/.test(k)) continue;
      lines.push(
        `| ${db} | ${k.slice(1)} | ${cell(get(v, "delivered_per_s"))} | ${cell(get(v, "ceiling_per_s"))} | ${cell(get(v, "ratio"))} | ${cell(get(v, "agent_only_per_s"))} | ${cell(get(v, "controller_cpu_ms_per_delivery"))} | ${cell(get(v, "agent_cpu_ms_per_delivery"))} | ${cell(get(v, "database_cpu_ms_per_delivery"))} | ${cell(get(v, "lead_clients_cpu_ms_per_delivery"))} | ${cell(get(v, "cores_busy"))} of ${cell(get(v, "cores"))} (${cell(get(v, "cores_stolen"))}) |`,
      );
    }
  }
  lines.push("");
  lines.push(
    `what bounds the 16-caller ratio (PostgreSQL): with a controller that spent no CPU and every core busy, the rest as measured allows at most ${cell(get(r, "journal.postgres.c16.ratio_bound_without_controller"))}× the ceiling, or ${cell(get(r, "journal.postgres.c16.ratio_bound_without_controller_or_leads"))}× with the leads' clients on other machines`,
    "",
  );
  lines.push(
    `memory: \`clankie up\` controller (PGlite) ${cell(get(r, "memory.up_controller_rss_mb"))} MB RSS after ${cell(get(r, "memory.up_deliveries.delivered"))} deliveries; proof age p99 with 16 callers ${cell(get(r, "proof_age.c16.p99_ms"))} ms`,
  );
  lines.push(
    `memory: controller peak RSS ${cell(get(r, "memory.controller_rss_mb_1m_receipts"))} MB with ${cell(get(r, "memory.receipts"))} receipts and ${cell(get(r, "memory.registered_seats"))} seats; idle agent RSS ${cell(get(r, "memory.agent_rss_mb"))} MB`,
    "",
  );
  lines.push(...goalRows(goals));
  return lines.join("\n");
}

/** Issue 36's goals at 1,000 linked agents, judged on a fleet_scale result (bench/sections/fleet-scale.ts). */
export function judgeFleetScaleGoals(r: Json): Goal[] {
  const at = "fleet_scale.n1000";
  const why = get(r, at) === undefined ? "not measured at 1,000 agents" : undefined;
  const relinked = num(r, `${at}.relink_not_back`);
  const relinkP99 = num(r, `${at}.relink_p99_s`);
  return [
    judge(
      "(36) controller idle CPU, 1,000 agents",
      "≤ 5% of one core",
      num(r, `${at}.controller_idle_cpu_pct`),
      (v) => v <= 5,
      "%",
      why,
    ),
    judge(
      "(36) controller RSS per linked agent beyond the empty controller",
      "≤ 0.2 MB",
      num(r, `${at}.rss_mb_per_agent`),
      (v) => v <= 0.2,
      " MB",
      why,
    ),
    judge(
      "(36) PostgreSQL row writes from the fleet at idle",
      "≤ 50/s",
      num(r, `${at}.pg_writes_per_s`),
      (v) => v <= 50,
      "/s",
      why,
    ),
    judge(
      "(36) every agent relinked after a controller restart (p99, all back)",
      "≤ 30 s",
      relinked === 0 ? relinkP99 : undefined,
      (v) => v <= 30,
      " s",
      why ?? `${relinked} agents not back`,
    ),
    judge("(36) deliveries lost across the restart", "0", num(r, `${at}.lost`), (v) => v === 0, "", why),
    judge(
      "(36) message_seat p50, 1,000 linked ÷ 1 linked",
      "≤ 1.2×",
      num(r, `${at}.delivery_p50_ratio`),
      (v) => v <= 1.2,
      "×",
      why,
    ),
  ];
}

/** The fleet_scale figures per size, then its goals. */
export function renderFleetScale(r: Json, goals: Goal[]): string {
  const sizes = Object.keys((get(r, "fleet_scale") as Json | undefined) ?? {}).filter((k) => /^n\d+$/.test(k));
  const keys = [
    "controller_idle_cpu_pct",
    "rss_mb_per_agent",
    "pg_writes_per_s",
    "pg_xacts_per_s",
    "pg_cpu_pct",
    "list_seats_ms",
    "watch_first_ms",
    "delivery_p50_ratio",
    "relink_p50_s",
    "relink_p99_s",
    "lost",
    "sim_cpu_pct",
    "link_all_s",
  ];
  const lines = [
    `fleet_scale at ${cell(r.when)} (${cell(r.mode)}), commit ${cell(r.commit)}; 1-linked delivery p50 ${cell(get(r, "fleet_scale.baseline_1_linked.p50_ms"))} ms, empty controller ${cell(get(r, "fleet_scale.empty_controller_rss_mb"))} MB`,
    "",
  ];
  lines.push(`| key | ${sizes.join(" | ")} |`, `|---|${sizes.map(() => "---|").join("")}`);
  for (const k of keys) lines.push(`| ${k} | ${sizes.map((s) => cell(get(r, `fleet_scale.${s}.${k}`))).join(" | ")} |`);
  lines.push(
    `| load average (start → end) | ${sizes.map((s) => `${cell(get(r, `fleet_scale.${s}.loadavg_start`))} → ${cell(get(r, `fleet_scale.${s}.loadavg_end`))}`).join(" | ")} |`,
    "",
  );
  lines.push(...goalRows(goals));
  return lines.join("\n");
}
