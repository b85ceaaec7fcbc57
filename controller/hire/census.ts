/** Asking a machine's agent what it holds of one hire (HireCensus): read-only unless sealing for a settle. */
import { create } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { eq } from "drizzle-orm";
import { HireCensusRequestSchema, type HireCensusResponse } from "../../shared/gen/clankie/fleet/v1/hire_pb.js";
import { machines } from "../db/schema.js";
import type { Db } from "../db/open.js";
import type { AgentClients } from "../nodes/agent-clients.js";

export type Census = { ok: true; census: HireCensusResponse } | { ok: false; detail: string };

export const CENSUS_TIMEOUT_MS = 10_000;
/** A sealing census waits for a hire still running on the agent (≤30 s readiness + the brief). */
export const SEAL_CENSUS_TIMEOUT_MS = 70_000;

/** A census reads the machine's row and calls its agent; nothing else. */
export interface CensusDeps {
  db: Db;
  agents: AgentClients;
}

export async function hireCensus(
  deps: CensusDeps,
  machineName: string,
  hireId: string,
  seal: boolean,
): Promise<Census> {
  const [machine] = await deps.db.select().from(machines).where(eq(machines.name, machineName));
  if (!machine) return { ok: false, detail: `machine ${machineName} is not registered` };
  const conn = deps.agents.get(machine.name, machine.endpoint, machine.agentToken);
  if (!(await conn.connect())) return { ok: false, detail: `the agent on ${machine.name} could not be reached` };
  try {
    return {
      ok: true,
      census: await conn.client.hireCensus(create(HireCensusRequestSchema, { hireId, seal }), {
        timeoutMs: seal ? SEAL_CENSUS_TIMEOUT_MS : CENSUS_TIMEOUT_MS,
      }),
    };
  } catch (e) {
    return { ok: false, detail: `the census on ${machine.name} failed: ${ConnectError.from(e).rawMessage}` };
  }
}

/** What a census saw, as evidence (never request text). */
export function censusEvidence(c: HireCensusResponse): Record<string, unknown> {
  return {
    observedAt: new Date(Number(c.observedAtUnixMs)).toISOString(),
    journal: c.journalState,
    panes: c.panes,
    processes: c.processes,
    sessions: c.sessions,
    seat: c.seatName || undefined,
    sha256: c.sha256,
    ...(c.complete
      ? {}
      : { incomplete: c.unknown.length ? c.unknown : ["the agent could not observe part of the machine"] }),
  };
}

/** True when the census found nothing from the hire and its host journal never committed a launch. */
export function provesNoLaunch(c: HireCensusResponse): boolean {
  return (
    c.complete &&
    ["absent", "reserved", "sealed"].includes(c.journalState) &&
    c.panes.length === 0 &&
    c.processes.length === 0 &&
    c.sessions.length === 0 &&
    !c.seatName
  );
}

/** Why a census does not prove not-launched: what it found, and what it could not tell. */
export function notLaunchedRefusal(machine: string, hireId: string, c: HireCensusResponse): string {
  const incomplete = c.complete
    ? ""
    : `; the census is incomplete: ${c.unknown.join("; ") || "the agent could not observe part of the machine"}`;
  return `the census of ${machine} does not prove hire ${hireId} never launched (journal ${c.journalState}; panes ${c.panes.join(", ") || "none"}; processes ${c.processes.join(", ") || "none"}; sessions ${c.sessions.join(", ") || "none"}${incomplete}); settle it abandoned-unknown to keep the evidence`;
}
