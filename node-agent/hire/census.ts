/**
 * The census of one hire on this machine (rule 53): every process whose environment
 * carries the hire marker (or names one of the hire's panes, for a pane host whose launch
 * takes no environment: Herdr), every pane (and its session) tagged with the hire id, the
 * pane the host journal recorded if it still exists, and the seat bound to it. Read-only;
 * the sha256 names exactly what was seen. Process facts come only from the ProofProvider,
 * so the census is the same code on Linux, macOS and Windows; where the provider cannot
 * tell (no process table, an environment it cannot read for a reason other than another
 * owner) the census is incomplete and says why, and an incomplete census never proves that
 * nothing launched.
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../../shared/fingerprint.js";
import type { ProofProvider } from "../proofs/provider.js";
import { HIRE_ENV, type PaneOpener } from "./pane-opener.js";

export interface CensusView {
  panes: string[];
  processes: number[];
  sessions: string[];
  complete: boolean;
  /** Why the census is incomplete (empty when complete): what the provider or pane host could not tell. */
  unknown: string[];
  observedAtMs: number;
  sha256: string;
}

/** Environment pairs every process in one pane carries (all must match); Herdr: HERDR_PANE_ID and its socket. */
export type PaneMarkers = Record<string, string>[];

export interface MarkedProcesses {
  pids: number[];
  /** Processes (or the whole table) whose marker the provider could not tell; empty: the answer is complete. */
  unknown: string[];
}

/** At most this many per-process unknowns are named; the rest are counted. */
const NAMED_UNKNOWNS = 5;

/**
 * Processes carrying this hire's marker, from the provider alone. A process gone since the
 * listing is not an effect that exists. One whose environment is withheld for permission
 * belongs to another user (or is protected from this one): every hire effect is started by
 * this agent, as its own user, whose processes each provider can read, so it is not the
 * hire's. Anything else unknown (unsupported, a race) could hide the marker.
 */
export async function markedProcesses(
  hireId: string,
  proofs: ProofProvider,
  paneMarkers: PaneMarkers = [],
): Promise<MarkedProcesses> {
  const all = await proofs.processes();
  if (!all.known)
    return {
      pids: [],
      unknown: [`${proofs.platform} cannot list this host's processes (${all.reason}: ${all.detail})`],
    };
  const pids: number[] = [];
  const unknown: string[] = [];
  let unnamed = 0;
  for (const p of all.value) {
    if (p.pid === process.pid) continue;
    const env = await proofs.environment(p);
    if (!env.known) {
      if (env.reason === "pid_gone" || env.reason === "permission") continue;
      if (unknown.length < NAMED_UNKNOWNS)
        unknown.push(`pid ${p.pid} (${p.name}): its environment is ${env.reason} (${env.detail})`);
      else unnamed++;
      continue;
    }
    const e = env.value;
    const inPane = paneMarkers.some((m) => Object.entries(m).every(([k, v]) => e.get(k) === v));
    if (e.get(HIRE_ENV) === hireId || inPane) pids.push(p.pid);
  }
  if (unnamed) unknown.push(`and ${unnamed} more processes whose environment could not be read`);
  return { pids: pids.sort((a, b) => a - b), unknown };
}

export async function observeHire(
  hireId: string,
  proofs: ProofProvider,
  opener: PaneOpener | undefined,
  recordedPane: string | undefined,
): Promise<CensusView> {
  const unknown: string[] = [];
  const panes = new Map<string, string>();
  if (opener) {
    try {
      for (const p of await opener.panesOf(hireId)) panes.set(p.paneId, p.session);
      if (recordedPane && !panes.has(recordedPane)) {
        const live = await opener.liveness(recordedPane);
        if (live.state !== "gone") panes.set(recordedPane, "");
      }
    } catch (e) {
      // A pane host we cannot read hides nothing we may claim is absent.
      unknown.push(`the ${opener.kind} pane host could not be read (${(e as Error).message})`);
    }
  }
  // The recorded pane counts even when the pane host is unreadable now: a process in it is the hire's.
  const paneIds = new Set([...panes.keys(), ...(recordedPane ? [recordedPane] : [])]);
  const markers = opener?.processMarkers ? [...paneIds].flatMap((id) => opener.processMarkers!(id)) : [];
  const marked = await markedProcesses(hireId, proofs, markers);
  unknown.push(...marked.unknown);
  const view = {
    panes: [...panes.keys()].sort(),
    processes: marked.pids,
    sessions: [...new Set([...panes.values()].filter(Boolean))].sort(),
    complete: unknown.length === 0,
    unknown,
    observedAtMs: Date.now(),
  };
  return { ...view, sha256: createHash("sha256").update(canonicalJson(view)).digest("hex") };
}
