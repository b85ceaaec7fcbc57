/**
 * Which seat a worker caller belongs to (rule 48; ADR 0050 addendum "Codex callers"). The
 * kernel names the process at the other end of the worker socket; its ancestry decides:
 * - under a Codex app-server (the nearest ancestor that is `codex app-server`), the pane tree
 *   says nothing, because a shared daemon runs every thread's MCP servers as its own children
 *   under the pane whose TUI started it. The caller is then the seat, among the Codex seats
 *   that app-server hosts (their endpoint is its socket), whose proven thread is the one the
 *   call names (Codex 0.169 sends `_meta.threadId` in every tools/call). Without a thread id,
 *   only an app-server hosting exactly one seat attributes; more is `ambiguous_worker`;
 * - otherwise the one seat whose pane shell is among the caller's ancestors.
 * A hired Codex seat has its own app-server in its pane (launch-codex.ts), which hosts only it.
 */
import { posix } from "node:path";
import { SeatKind } from "../../shared/verdicts.js";
import type { SeatRecord } from "../harnesses/adapter.js";
import { unixSocketPathOf } from "../harnesses/codex/connection.js";
import { daemonSocketPath } from "../harnesses/codex/process.js";
import { appServerArgs, listenPathOf } from "../harnesses/codex/private-server.js";
import type { PaneHost } from "../panes/pane-host.js";
import { boundPathOf } from "../proofs/socket-backend-proof.js";
import { sameIdentity, type ProcessEntry, type ProofProvider } from "../proofs/provider.js";

export type Attribution =
  | { seat: SeatRecord }
  | { reason: "unproven_caller" | "not_in_a_seat_pane" | "ambiguous_worker" | "unknown_worker_thread"; detail: string };

/** The Codex app-server a caller runs under, as the attribution needs it. */
export interface CodexHost {
  process: ProcessEntry;
  /** The socket it serves: `--listen unix://PATH`, or the daemon's under its home. */
  socketPath: string | undefined;
}

const socketOf = (seat: SeatRecord): string | undefined => {
  const e = seat.kind === SeatKind.Codex ? seat.control?.endpoint : undefined;
  return typeof e === "string" ? unixSocketPathOf(e) : undefined;
};
const samePath = (a: string, b: string) => posix.resolve(boundPathOf(a)) === posix.resolve(boundPathOf(b));

/** The seats an app-server hosts: Codex seats on its socket, or whose recorded backend it is. */
export function hostedSeats(host: CodexHost, seats: readonly SeatRecord[]): SeatRecord[] {
  return seats.filter((s) => {
    if (s.kind !== SeatKind.Codex) return false;
    const c = s.control;
    if (
      c?.backendPid !== undefined &&
      c.backendStartTime !== undefined &&
      sameIdentity({ pid: c.backendPid, startTime: c.backendStartTime }, host.process)
    )
      return true;
    const path = socketOf(s);
    return path !== undefined && host.socketPath !== undefined && samePath(path, host.socketPath);
  });
}

/** The decision, from facts already read (pure: unit-tested). `paneMatches`: seats whose pane shell is an ancestor. */
export function attribute(o: {
  host: CodexHost | undefined;
  thread: string | undefined;
  seats: readonly SeatRecord[];
  paneMatches: readonly SeatRecord[];
}): Attribution {
  if (!o.host) {
    if (o.paneMatches.length === 1) return { seat: o.paneMatches[0]! };
    return {
      reason: "not_in_a_seat_pane",
      detail:
        o.paneMatches.length === 0
          ? "the caller runs in no seat's pane on this machine"
          : "the caller's pane holds more than one seat",
    };
  }
  const hosted = hostedSeats(o.host, o.seats);
  const where = `the Codex app-server pid ${o.host.process.pid}${o.host.socketPath ? ` on ${o.host.socketPath}` : ""}`;
  if (hosted.length === 0)
    return {
      reason: "not_in_a_seat_pane",
      detail: `the caller runs under ${where}, which hosts no seat on this machine`,
    };
  if (o.thread) {
    const m = hosted.filter((s) => s.kind === SeatKind.Codex && s.control?.threadId === o.thread);
    if (m.length === 1) return { seat: m[0]! };
    return {
      reason: "unknown_worker_thread",
      detail: `the call came from Codex thread ${o.thread} on ${where}, which is not the proven thread of any of its ${hosted.length} seat(s)`,
    };
  }
  if (hosted.length === 1 && o.paneMatches.some((s) => s.name === hosted[0]!.name)) return { seat: hosted[0]! };
  return {
    reason: "ambiguous_worker",
    detail: `the caller runs under ${where}, which hosts ${hosted.length} seats' threads, and the call names no Codex thread: its pane cannot be told from the process tree. Fix: hire the seat (a hired Codex has its own app-server), or run one Codex TUI per CODEX_HOME`,
  };
}

export function isDaemonListen(args: readonly string[]): boolean {
  const at = args.indexOf("--listen");
  const v = at >= 0 ? args[at + 1] : args.find((a) => a.startsWith("--listen="))?.slice("--listen=".length);
  return v === undefined || v === "unix://";
}

/** The nearest ancestor (the caller itself excluded) that is a Codex app-server, read from the kernel. */
export async function codexHostOf(
  provider: ProofProvider,
  chain: readonly ProcessEntry[],
): Promise<CodexHost | undefined> {
  for (const p of chain.slice(1)) {
    const argv = await provider.commandLine(p);
    if (!argv.known) continue;
    const args = appServerArgs(argv.value.argv);
    if (!args) continue;
    let socketPath = listenPathOf(args);
    // Only the daemon (`--listen unix://` or no --listen) serves its home's default socket; a ws:// server has none.
    if (!socketPath && isDaemonListen(args)) {
      const home = await provider.home(p, "codex");
      if (home.known) socketPath = daemonSocketPath(home.value.path, provider.platform);
    }
    return { process: p, socketPath };
  }
  return undefined;
}

/**
 * The seat of the process at the other end of a worker connection, or why not; with the pids of
 * the caller's proven ancestry (a Claude question also needs the seat's own Claude among them).
 */
export async function attributeCaller(
  deps: { provider: ProofProvider; paneHost: PaneHost | undefined; seats: readonly SeatRecord[] },
  caller: ProcessEntry | { pid: number; startTime: number },
  thread: string | undefined,
): Promise<Exclude<Attribution, { seat: SeatRecord }> | { seat: SeatRecord; pids: ReadonlySet<number> }> {
  const ancestry = await deps.provider.ancestry(caller);
  if (!ancestry.known || ancestry.value.broken)
    return { reason: "unproven_caller", detail: "the caller's ancestry could not be read" };
  const chain = ancestry.value.chain;
  if (!deps.paneHost) return { reason: "not_in_a_seat_pane", detail: "this agent watches no panes" };
  const pids = new Set(chain.map((p) => p.pid));
  const paneMatches: SeatRecord[] = [];
  for (const seat of deps.seats) {
    if (!seat.pane) continue;
    const info = await deps.paneHost.processInfo(seat.pane.paneId).catch(() => undefined);
    if (info && pids.has(info.shellPid)) paneMatches.push(seat);
  }
  const host = await codexHostOf(deps.provider, chain);
  const found = attribute({ host, thread, seats: deps.seats, paneMatches });
  return "seat" in found ? { seat: found.seat, pids } : found;
}
