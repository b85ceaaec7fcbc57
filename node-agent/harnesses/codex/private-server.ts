/**
 * The private app-server of a hired Codex seat (ADR 0040 addendum; the unix-socket twin of
 * rule 38's Windows shape in codex-windows.ts): the TUI joined `--remote unix://SOCK`, and the
 * process at the other end of the agent's connection — the one the socket-backend proof
 * shows listening on SOCK — must be a `codex app-server --listen unix://SOCK` that runs in
 * this pane's own process tree, created after the pane's shell. An app-server elsewhere (the
 * account daemon, another pane's server) is refuted: a hired seat is steered, queued and read
 * only through its own server, and its worker MCP children are then attributable to this pane.
 */
import type { PaneHost } from "../../panes/pane-host.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import {
  describeIdentity,
  programName,
  sameIdentity,
  type ProcessIdentity,
  type ProofProvider,
} from "../../proofs/provider.js";
import type { SeatRecord } from "../adapter.js";
import { unixSocketPathOf } from "./connection.js";

export interface PrivateServerDeps {
  provider: ProofProvider;
  host: PaneHost | undefined;
  clock: MonotonicClock;
}

/** `codex app-server …` (or its node wrapper): the arguments after `app-server`, else undefined. */
export function appServerArgs(argv: readonly string[]): string[] | undefined {
  let i = 0;
  if (/^(node|nodejs)$/.test(programName(argv[0] ?? "")) && argv[1] && programName(argv[1]) === "codex") i = 1;
  if (programName(argv[i] ?? "") !== "codex") return undefined;
  const rest = argv.slice(i + 1);
  const sub = rest.findIndex((a) => !a.startsWith("-"));
  if (sub < 0 || rest[sub] !== "app-server") return undefined;
  return rest.slice(sub + 1);
}

/** Where an app-server listens, from its own flags: `--listen unix://PATH` → PATH; `unix://` alone is the daemon's default (undefined). */
export function listenPathOf(serverArgs: readonly string[]): string | undefined {
  const at = serverArgs.indexOf("--listen");
  const v = at >= 0 ? serverArgs[at + 1] : serverArgs.find((a) => a.startsWith("--listen="))?.slice("--listen=".length);
  if (!v?.startsWith("unix://") || v === "unix://") return undefined;
  return v.slice("unix://".length);
}

/** The backend of a `--remote unix://` seat is its own app-server, in its pane's tree. */
export async function privateServerProof(
  deps: PrivateServerDeps,
  seat: SeatRecord,
  ctl: { endpoint?: string | undefined; backendPid?: number | undefined; backendStartTime?: number | undefined },
): Promise<ProofFact> {
  const at = () => deps.clock.nowMs();
  const fact = (outcome: ProofFact["outcome"], detail: string): ProofFact => ({
    kind: "private_app_server",
    outcome,
    detail,
    completedAtMs: at(),
  });
  const path = unixSocketPathOf(ctl.endpoint ?? "");
  if (!path) return fact("refuted", `the seat's endpoint ${ctl.endpoint ?? "(none)"} is not a private unix socket`);
  if (!deps.host || !seat.pane) return fact("unknown", "unsupported: the seat has no pane host to prove its pane with");
  if (ctl.backendPid === undefined || ctl.backendStartTime === undefined)
    return fact("unknown", "race: no single app-server process was found at the other end of the agent's connection");
  const backend: ProcessIdentity = { pid: ctl.backendPid, startTime: ctl.backendStartTime };
  let shellPid: number;
  try {
    shellPid = (await deps.host.processInfo(seat.pane.paneId)).shellPid;
  } catch (e) {
    return fact("unknown", `${deps.host.kind}: ${(e as Error).message}`);
  }
  const [shell, chain, argv] = await Promise.all([
    deps.provider.identify(shellPid),
    deps.provider.ancestry(backend),
    deps.provider.commandLine(backend),
  ]);
  for (const f of [shell, chain, argv])
    if (!f.known) return fact(f.reason === "pid_gone" ? "refuted" : "unknown", `${f.reason}: ${f.detail}`);
  if (!shell.known || !chain.known || !argv.known) throw new Error("unreachable");
  const args = appServerArgs(argv.value.argv);
  if (!args)
    return fact(
      "refuted",
      `the backend ${describeIdentity(backend)} is not a codex app-server (${argv.value.argv.slice(0, 3).join(" ")})`,
    );
  const listens = listenPathOf(args);
  if (listens !== path)
    return fact(
      "refuted",
      `the backend listens by its flags on ${listens ?? "the account daemon's default socket"}, not the seat's private ${path}`,
    );
  if (chain.value.broken || !chain.value.chain.some((p) => sameIdentity(p, shell.value)))
    return fact(
      "refuted",
      `the app-server ${describeIdentity(backend)} does not run in pane ${seat.pane.paneId}'s tree (its shell ${describeIdentity(shell.value)})`,
    );
  const self = chain.value.chain[0]!;
  if (self.startTime < shell.value.startTime)
    return fact("refuted", "the app-server was created before the pane's shell");
  return fact(
    "proven",
    `the app-server ${describeIdentity(backend)} on ${path} runs in pane ${seat.pane.paneId}'s tree`,
  );
}
