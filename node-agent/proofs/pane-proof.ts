/**
 * The pane proof (ADR 0207, "Private Windows Codex control"): the pane host's view of a
 * pane (pane id, terminal, session, foreground processes) combined with kernel facts: the
 * native TUI and its backend are the recorded process lifetimes, share the pane's
 * foreground ancestry, were created in the expected order, use the same private home, and
 * the backend's loopback listener is the one the agent's own connection reaches. Titles,
 * banners, saved session ids and endpoint files are never read here: they confer no authority.
 */
import type { PaneHost, PaneProcessInfo } from "../panes/pane-host.js";
import type { MonotonicClock, ProofFact } from "./proof.js";
import {
  describeIdentity,
  sameAddress,
  sameHome,
  sameIdentity,
  type Ancestry,
  type Fact,
  type HomeHarness,
  type ProcessEntry,
  type ProcessIdentity,
  type ProofProvider,
  type TcpTuple,
} from "./provider.js";

export interface PaneProofRequest {
  pane: { paneId: string; terminalId: string; sessionId: string };
  tui: ProcessIdentity;
  backend: ProcessIdentity;
  /** Which of the two the launch creates first. */
  order: "backend_first" | "tui_first";
  harness: HomeHarness;
  /** The private home both must use. */
  home: string;
  /** The agent's own connection to the backend. */
  connection: TcpTuple;
}

export interface PaneProofDeps {
  host: PaneHost;
  provider: ProofProvider;
  clock: MonotonicClock;
}

export const PANE_PROOF_KINDS = [
  "pane_identity",
  "process_identity",
  "foreground_ancestry",
  "creation_order",
  "private_home",
  "backend_listener",
  "connection_tuple",
] as const;

type Stamp = { completedAtMs: number };

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function proofOf(kind: string, outcome: ProofFact["outcome"], detail: string, ...stamps: Stamp[]): ProofFact {
  return { kind, outcome, detail, completedAtMs: Math.max(...stamps.map((s) => s.completedAtMs)) };
}

function unknownOf(kind: string, f: Fact<unknown> & { known: false }): ProofFact {
  return proofOf(kind, "unknown", `${f.reason}: ${f.detail}`, f);
}

/** Does the chain reach `ancestor` (same lifetime) before any break? */
function descendsFrom(a: Ancestry, ancestor: ProcessIdentity): boolean {
  return a.chain.some((p) => sameIdentity(p, ancestor));
}

/** Creation order by kernel start time; one tick apart or equal falls back to pid allocation order. */
function createdBefore(a: ProcessEntry | ProcessIdentity, b: ProcessEntry | ProcessIdentity): boolean {
  return a.startTime < b.startTime || (a.startTime === b.startTime && a.pid < b.pid);
}

export async function paneIdentity(deps: PaneProofDeps, req: PaneProofRequest): Promise<ProofFact> {
  try {
    const panes = await deps.host.listPanes();
    const pane = panes.find((p) => p.paneId === req.pane.paneId);
    const now = { completedAtMs: deps.clock.nowMs() };
    if (!pane) return proofOf("pane_identity", "refuted", `${deps.host.kind} has no pane ${req.pane.paneId}`, now);
    if (pane.terminalId !== req.pane.terminalId || pane.sessionId !== req.pane.sessionId) {
      return proofOf(
        "pane_identity",
        "refuted",
        `pane ${pane.paneId} is now terminal ${pane.terminalId} in session ${pane.sessionId}, not ${req.pane.terminalId} in ${req.pane.sessionId}`,
        now,
      );
    }
    return proofOf(
      "pane_identity",
      "proven",
      `${deps.host.kind} pane ${pane.paneId}, terminal ${pane.terminalId}, session ${pane.sessionId}`,
      now,
    );
  } catch (e) {
    return proofOf("pane_identity", "unknown", `${deps.host.kind}: ${(e as Error).message}`, {
      completedAtMs: deps.clock.nowMs(),
    });
  }
}

async function lifetimes(deps: PaneProofDeps, req: PaneProofRequest): Promise<ProofFact> {
  const [tui, backend] = await Promise.all([
    deps.provider.identify(req.tui.pid),
    deps.provider.identify(req.backend.pid),
  ]);
  for (const [role, f, want] of [
    ["TUI", tui, req.tui],
    ["backend", backend, req.backend],
  ] as const) {
    if (!f.known)
      return f.reason === "pid_gone"
        ? proofOf("process_identity", "refuted", `${role}: ${f.detail}`, tui, backend)
        : unknownOf("process_identity", f);
    if (!sameIdentity(f.value, want)) {
      return proofOf(
        "process_identity",
        "refuted",
        `${role} pid ${want.pid} is another process now (start ${f.value.startTime}, recorded ${want.startTime}): pid reused`,
        tui,
        backend,
      );
    }
  }
  return proofOf(
    "process_identity",
    "proven",
    `TUI ${describeIdentity(req.tui)}, backend ${describeIdentity(req.backend)}`,
    tui,
    backend,
  );
}

/** Foreground ancestry and creation order, from one reading of the pane host and the kernel. */
async function ancestryAndOrder(
  deps: PaneProofDeps,
  req: PaneProofRequest,
  pending: Promise<PaneProcessInfo>,
): Promise<ProofFact[]> {
  let info: PaneProcessInfo;
  try {
    info = await pending;
  } catch (e) {
    const p = proofOf("foreground_ancestry", "unknown", `${deps.host.kind}: ${(e as Error).message}`, {
      completedAtMs: deps.clock.nowMs(),
    });
    return [p, { ...p, kind: "creation_order" }];
  }
  const shell = await deps.provider.identify(info.shellPid);
  const [tuiChain, backendChain] = await Promise.all([
    deps.provider.ancestry(req.tui),
    deps.provider.ancestry(req.backend),
  ]);
  if (!shell.known || !tuiChain.known || !backendChain.known) {
    const f = [shell, tuiChain, backendChain].find((x) => !x.known) as Fact<unknown> & { known: false };
    const kind = f.reason === "pid_gone" ? "refuted" : "unknown";
    const p = proofOf("foreground_ancestry", kind, `${f.reason}: ${f.detail}`, shell, tuiChain, backendChain);
    return [p, { ...p, kind: "creation_order" }];
  }
  const fg = await deps.provider.foregroundGroup(shell.value);
  const stamps = [shell, tuiChain, backendChain, fg];
  const problems: string[] = [];
  if (!info.foregroundProcesses.some((p) => p.pid === req.tui.pid))
    problems.push(`${deps.host.kind} does not show the TUI (pid ${req.tui.pid}) in the pane's foreground`);
  if (!descendsFrom(tuiChain.value, shell.value))
    problems.push(`the TUI does not descend from the pane's shell ${describeIdentity(shell.value)}`);
  if (!descendsFrom(backendChain.value, shell.value))
    problems.push(`the backend does not descend from the pane's shell ${describeIdentity(shell.value)}`);
  let how = "the pane host's foreground list and ancestry";
  if (fg.known) {
    const group = fg.value.foregroundPgid;
    if (fg.value.foregroundPgid !== info.foregroundProcessGroupId)
      problems.push(
        `the kernel's foreground group is ${fg.value.foregroundPgid}, the pane host says ${info.foregroundProcessGroupId}`,
      );
    if (info.tty && fg.value.tty !== info.tty)
      problems.push(`the shell's terminal is ${fg.value.tty || "none"}, the pane's is ${info.tty}`);
    if (tuiChain.value.chain[0]!.pgid !== group)
      problems.push(
        `the TUI is in process group ${tuiChain.value.chain[0]!.pgid}, not the terminal's foreground group ${group}`,
      );
    // The backend shares the foreground ancestry when it, or one of its ancestors, is in the foreground group.
    if (!backendChain.value.chain.some((a) => a.pgid === group))
      problems.push(`the backend is not in, nor below, the terminal's foreground group ${group}`);
    how = `foreground group ${fg.value.foregroundPgid} on ${fg.value.tty}`;
  } else if (fg.reason !== "unsupported") {
    // Windows has no foreground group (unsupported): the pane host's list stands in; anything else is unknown.
    return [unknownOf("foreground_ancestry", fg), unknownOf("creation_order", fg)];
  }
  const ancestry = problems.length
    ? proofOf("foreground_ancestry", "refuted", problems.join("; "), ...stamps)
    : proofOf("foreground_ancestry", "proven", `TUI and backend share the pane's ancestry (${how})`, ...stamps);

  const order: string[] = [];
  const [tuiSelf, backendSelf] = [tuiChain.value.chain[0]!, backendChain.value.chain[0]!];
  if (!createdBefore(shell.value, tuiSelf) || !createdBefore(shell.value, backendSelf))
    order.push("a process was created before the pane's shell");
  const [first, second] = req.order === "backend_first" ? [backendSelf, tuiSelf] : [tuiSelf, backendSelf];
  if (!createdBefore(first, second))
    order.push(
      `expected ${req.order.replace("_", " ")}, found the reverse (backend start ${backendSelf.startTime}, TUI start ${tuiSelf.startTime})`,
    );
  const creation = order.length
    ? proofOf("creation_order", "refuted", order.join("; "), ...stamps)
    : proofOf(
        "creation_order",
        "proven",
        `shell, then ${req.order === "backend_first" ? "backend, then TUI" : "TUI, then backend"}`,
        ...stamps,
      );
  return [ancestry, creation];
}

export async function privateHome(deps: PaneProofDeps, req: PaneProofRequest): Promise<ProofFact> {
  const [tui, backend] = await Promise.all([
    deps.provider.home(req.tui, req.harness),
    deps.provider.home(req.backend, req.harness),
  ]);
  if (!tui.known) return unknownOf("private_home", tui);
  if (!backend.known) return unknownOf("private_home", backend);
  const p = deps.provider.platform;
  if (!sameHome(tui.value.path, req.home, p) || !sameHome(backend.value.path, req.home, p)) {
    return proofOf(
      "private_home",
      "refuted",
      `expected ${req.home}; the TUI uses ${tui.value.path} (${tui.value.variable}), the backend ${backend.value.path} (${backend.value.variable})`,
      tui,
      backend,
    );
  }
  return proofOf(
    "private_home",
    "proven",
    `TUI and backend both use ${req.home} (${tui.value.variable})`,
    tui,
    backend,
  );
}

async function backendListener(deps: PaneProofDeps, req: PaneProofRequest): Promise<ProofFact> {
  const f = await deps.provider.listeners(req.backend);
  if (!f.known) return unknownOf("backend_listener", f);
  const { remoteAddress, remotePort } = req.connection;
  const match = f.value.listeners.find(
    (l) =>
      l.transport === "tcp" &&
      l.port === remotePort &&
      (sameAddress(l.address, remoteAddress) || l.address === "0.0.0.0" || l.address === "::"),
  );
  if (match?.transport !== "tcp")
    return proofOf("backend_listener", "refuted", `the backend does not listen on ${remoteAddress}:${remotePort}`, f);
  if (!match.isLoopback)
    return proofOf(
      "backend_listener",
      "refuted",
      `the backend listens on ${match.address}:${match.port}, not on loopback only`,
      f,
    );
  return proofOf("backend_listener", "proven", `the backend listens on ${match.address}:${match.port}`, f);
}

async function connectionTuple(deps: PaneProofDeps, req: PaneProofRequest): Promise<ProofFact> {
  const f = await deps.provider.connectionPeer(req.connection);
  if (!f.known) return unknownOf("connection_tuple", f);
  const t = req.connection;
  const tuple = `${t.localAddress}:${t.localPort} -> ${t.remoteAddress}:${t.remotePort}`;
  if (!f.value.isAgentEnd)
    return proofOf("connection_tuple", "refuted", `the kernel shows no established ${tuple} held by this agent`, f);
  const peers = f.value.peers;
  if (peers.length === 1 && sameIdentity(peers[0]!, req.backend)) {
    if (!f.value.isComplete)
      return proofOf(
        "connection_tuple",
        "unknown",
        `permission: ${tuple} ends in the backend, but not every process could be inspected to show it is the only holder`,
        f,
      );
    return proofOf(
      "connection_tuple",
      "proven",
      `${tuple} ends in the backend ${describeIdentity(req.backend)} and nowhere else`,
      f,
    );
  }
  if (peers.length === 0 && !f.value.isComplete)
    return proofOf(
      "connection_tuple",
      "unknown",
      `permission: the other end of ${tuple} is held by a process this agent cannot inspect`,
      f,
    );
  const holders = peers.length ? peers.map(describeIdentity).join(", ") : "no live process";
  return proofOf(
    "connection_tuple",
    "refuted",
    `the other end of ${tuple} is held by ${holders}, not the backend ${describeIdentity(req.backend)}`,
    f,
  );
}

/**
 * Every pane proof, each stamped when its own facts completed. A proof ages from the moment
 * it completes, so the order is chosen for the freshness gate: the costliest read (the
 * kernel's TCP table and every process's descriptors) runs first and everything after it is
 * all that ages it at the write; the pane host is asked next, and the cheap kernel reads run
 * while its answer is on the way.
 */
export async function provePane(deps: PaneProofDeps, req: PaneProofRequest): Promise<ProofFact[]> {
  const tuple = await connectionTuple(deps, req);
  // The kernel reads are synchronous: let the agent's other requests (and its link's PINGs)
  // run between them rather than wait behind a whole pane proof.
  await yieldToEventLoop();
  const listener = await backendListener(deps, req);
  await yieldToEventLoop();
  const pane = paneIdentity(deps, req);
  let info: Promise<PaneProcessInfo>;
  try {
    info = deps.host.processInfo(req.pane.paneId);
  } catch (e) {
    info = Promise.reject(e as Error);
  }
  info.catch(() => {});
  const identity = await lifetimes(deps, req);
  const home = await privateHome(deps, req);
  const [ancestry, order] = await ancestryAndOrder(deps, req, info);
  return [await pane, identity, ancestry!, order!, home, listener, tuple];
}
