/**
 * Section 3: full deliveries per second to mailbox seats (MCP message_seat through the
 * controller process to the agent process, one seat per caller so per-seat turn-taking does
 * not serialise them) against the database's ceiling,
 * at 1, 4 and 16 callers. Full and ceiling alternate in short rounds within each level, so
 * both see the same machine.
 */
import type { BenchFleet } from "../fleet.js";
import { loopFor, type CeilingRunner } from "./ceiling.js";
import { round, summarize, type LatencySummary } from "../stats.js";
import { availableParallelism } from "node:os";
import { boxCpuMs, cpuMsOf, postgresCpuMs } from "../processes.js";

export interface JournalConfig {
  callers: number[];
  /** Measured time per level and per side (full, ceiling), split over `rounds`. */
  secondsPerLevel: number;
  rounds: number;
}

export interface JournalLevel {
  delivered_per_s: number;
  ceiling_per_s: number;
  ratio: number;
  /** The agent alone (Deliver calls, no journal) at the same concurrency: what the agent side allows. */
  agent_only_per_s: number | null;
  /**
   * CPU each process spent per full delivery (it does not depend on how busy the box is, but
   * on a virtual machine the hypervisor's steal can read as the process's own time: see
   * `cores_stolen`). 1000 / this is the most one core could deliver through that process.
   */
  controller_cpu_ms_per_delivery: number;
  agent_cpu_ms_per_delivery: number;
  /**
   * Where the rest of the box went, over the same full rounds: the PostgreSQL server's
   * processes (null on PGlite, which runs inside the controller), this bench process (the
   * leads' MCP clients), how many of the box's cores were busy in all (`cores_busy` of
   * `cores`), and how many the hypervisor took (`cores_stolen`). What bounds the delivered rate
   * at 16 callers, measured rather than argued.
   */
  database_cpu_ms_per_delivery: number | null;
  lead_clients_cpu_ms_per_delivery: number;
  cores_busy: number;
  cores_stolen: number;
  cores: number;
  /**
   * What bounds `ratio` on this box, from the same rounds' CPU: the ratio it would reach if the
   * controller spent no CPU at all and every core were busy with the rest of each delivery (the
   * agent, the database, the leads' clients) as measured. Then the same without the leads'
   * clients too, as when the leads run on other machines. Null on PGlite, whose database runs
   * inside the controller.
   */
  ratio_bound_without_controller: number | null;
  ratio_bound_without_controller_or_leads: number | null;
  delivered: number;
  not_delivered: Record<string, number>;
  /** The proof age at the write each delivered message reported, at this concurrency. */
  proof_age_ms: LatencySummary | null;
}

// Unique text per call: identical content to a seat with an unresolved receipt is fenced (ADR 0207).
let sent = 0;
const message = () => `journal bench message ${++sent}`;

export async function runJournal(
  cfg: JournalConfig,
  fleet: BenchFleet,
  ceiling: CeilingRunner,
  journal: "postgres" | "pglite" = "postgres",
): Promise<{ levels: Record<string, JournalLevel>; refused: number }> {
  const levels: Record<string, JournalLevel> = {};
  let refused = 0;
  await fleet.openCallers(Math.max(...cfg.callers));
  // Warm both sides: JIT, connections, the agent's HTTP/2 session.
  await loopFor(
    300,
    2,
    async (c) => (await fleet.deliver(fleet.seatIds[c % fleet.seatIds.length]!, message(), c)).outcome === "delivered",
  );
  await ceiling.run(2, 300);
  for (const callers of cfg.callers) {
    const roundMs = (cfg.secondsPerLevel * 1000) / cfg.rounds;
    let full = { ok: 0, ms: 0 };
    let raw = { ok: 0, ms: 0 };
    let agentOnly = { ok: 0, ms: 0 };
    const cpu = { controller: 0, agent: 0, database: 0, leads: 0, box: 0, stolen: 0 };
    const ctlPid = fleet.controller.child.pid!;
    const agentPid = fleet.agent.child.pid!;
    const notDelivered: Record<string, number> = {};
    const proofAges: number[] = [];
    for (let r = 0; r < cfg.rounds; r++) {
      const c = await ceiling.run(callers, roundMs);
      raw = { ok: raw.ok + c.ok, ms: raw.ms + c.elapsedMs };
      const before = {
        controller: cpuMsOf(ctlPid),
        agent: cpuMsOf(agentPid),
        database: journal === "postgres" ? postgresCpuMs() : 0,
        leads: process.cpuUsage(),
        box: boxCpuMs(),
      };
      const f = await loopFor(roundMs, callers, async (caller) => {
        const d = await fleet.deliver(fleet.seatIds[caller % fleet.seatIds.length]!, message(), caller);
        if (d.outcome === "delivered") {
          if (typeof d.proofAgeMs === "number") proofAges.push(d.proofAgeMs);
          return true;
        }
        const key = `${d.outcome}:${d.reason ?? ""}`;
        notDelivered[key] = (notDelivered[key] ?? 0) + 1;
        if (d.reason === "proof_stale") refused++;
        return false;
      });
      full = { ok: full.ok + f.ok, ms: full.ms + f.elapsedMs };
      cpu.controller += cpuMsOf(ctlPid) - before.controller;
      cpu.agent += cpuMsOf(agentPid) - before.agent;
      if (journal === "postgres") cpu.database += postgresCpuMs() - before.database;
      const leads = process.cpuUsage(before.leads);
      cpu.leads += (leads.user + leads.system) / 1000;
      const box = boxCpuMs();
      cpu.box += box.busy - before.box.busy;
      cpu.stolen += box.stolen - before.box.stolen;
      const direct = fleet.deliverDirect;
      if (direct) {
        const a = await loopFor(
          roundMs,
          callers,
          async (caller) => (await direct(fleet.seatIds[caller % fleet.seatIds.length]!.split("/")[1]!, message())).ok,
        );
        agentOnly = { ok: agentOnly.ok + a.ok, ms: agentOnly.ms + a.elapsedMs };
      }
    }
    const delivered = full.ok / (full.ms / 1000);
    const ceil = raw.ok / (raw.ms / 1000);
    const perDelivery = (ms: number) => ms / Math.max(1, full.ok);
    const boundOf = (cpuMs: number) =>
      journal === "postgres" && cpuMs > 0 ? round((availableParallelism() * 1000) / perDelivery(cpuMs) / ceil) : null;
    levels[`c${callers}`] = {
      delivered_per_s: round(delivered, 1),
      ceiling_per_s: round(ceil, 1),
      ratio: round(delivered / ceil),
      agent_only_per_s: agentOnly.ms ? round(agentOnly.ok / (agentOnly.ms / 1000), 1) : null,
      controller_cpu_ms_per_delivery: round(cpu.controller / Math.max(1, full.ok), 1),
      agent_cpu_ms_per_delivery: round(cpu.agent / Math.max(1, full.ok), 1),
      database_cpu_ms_per_delivery: journal === "postgres" ? round(cpu.database / Math.max(1, full.ok), 1) : null,
      lead_clients_cpu_ms_per_delivery: round(cpu.leads / Math.max(1, full.ok), 1),
      cores_busy: round(cpu.box / full.ms, 2),
      cores_stolen: round(cpu.stolen / full.ms, 2),
      cores: availableParallelism(),
      ratio_bound_without_controller: boundOf(cpu.agent + cpu.database + cpu.leads),
      ratio_bound_without_controller_or_leads: boundOf(cpu.agent + cpu.database),
      delivered: full.ok,
      not_delivered: notDelivered,
      proof_age_ms: proofAges.length ? summarize(proofAges) : null,
    };
  }
  return { levels, refused };
}
