/**
 * Private Windows Codex control (inventory rule 38, ADR 0207 "Private Windows Codex control",
 * VUH-1563). On Windows the agent never joins the account's shared daemon (joining it can cut
 * the worker MCP bridge off from its pane). A pane's Codex is controlled only through:
 * - a dedicated loopback app-server in the same pane's foreground tree, inheriting the
 *   launch's environment, CODEX_HOME, cwd and configuration, with the TUI attached to it by
 *   `--remote ws://127.0.0.1:PORT` (steer and queue, proven by the pane proof plus the
 *   launch-inheritance proof here); or
 * - `codex queue` through the CLI, only while a fresh kernel probe shows the pane's home is
 *   this account's default `~/.codex` (the CLI, run without CODEX_HOME, inherits that same
 *   home). A private or unproved home refuses it, and a seat with a private app-server never
 *   falls through to it: the plan is fixed by the launch at discovery, never by a failure.
 * `--no-daemon` (an embedded server nobody can reach) and `-p/--profile` launches are refused
 * with the reason. Just before every dispatch, the pane identity and the home are proven again.
 */
import { win32 } from "node:path";
import { AgentResult } from "../../../shared/verdicts.js";
import type { PaneHost } from "../../panes/pane-host.js";
import { paneIdentity, privateHome } from "../../proofs/pane-proof.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import { sameHome, type ProcessIdentity, type ProofProvider } from "../../proofs/provider.js";
import type { CommandRunner } from "../../proofs/run-command.js";
import type { NativeWriteResult, SeatRecord } from "../adapter.js";
import { codexLaunchFromArgs, type CodexTuiProcess } from "./process.js";

export type WindowsRefusal = "no_daemon" | "profile_launch" | "not_loopback";

export type WindowsControlPlan =
  | { kind: "private_app_server" }
  | { kind: "cli_queue" }
  | { kind: "refused"; reason: WindowsRefusal; detail: string };

/** What the launch allows, from the TUI's own flags; decided once, at discovery. */
export function windowsControlPlan(tui: Pick<CodexTuiProcess, "launch" | "profile" | "endpoint">): WindowsControlPlan {
  if (tui.launch === "no_daemon")
    return {
      kind: "refused",
      reason: "no_daemon",
      detail:
        "this Codex runs with --no-daemon: its embedded app-server has no endpoint any other process can reach, so it cannot be steered or queued",
    };
  if (tui.profile !== undefined)
    return {
      kind: "refused",
      reason: "profile_launch",
      detail: `this Codex was launched with profile ${JSON.stringify(tui.profile)} (-p/--profile): a profile launch cannot be steered on Windows`,
    };
  if (tui.launch === "remote") {
    const m = /^ws:\/\/(127\.\d+\.\d+\.\d+|\[::1\]|localhost):(\d+)\/?$/.exec(tui.endpoint ?? "");
    if (!m)
      return {
        kind: "refused",
        reason: "not_loopback",
        detail: `the TUI's --remote ${tui.endpoint ?? ""} is not a loopback ws:// endpoint of a dedicated app-server`,
      };
    return { kind: "private_app_server" };
  }
  return { kind: "cli_queue" };
}

export interface WindowsControlDeps {
  provider: ProofProvider;
  host: PaneHost | undefined;
  clock: MonotonicClock;
  /** This agent's user profile; the CLI it runs uses `<profile>\.codex`. */
  agentProfile: string;
}

const proof = (clock: MonotonicClock, kind: string, outcome: ProofFact["outcome"], detail: string): ProofFact => ({
  kind,
  outcome,
  detail,
  completedAtMs: clock.nowMs(),
});

/** Fresh kernel probe: the TUI's home is this account's default `~/.codex`, chosen by no CODEX_HOME. */
export async function defaultHomeProof(deps: WindowsControlDeps, tui: ProcessIdentity): Promise<ProofFact> {
  const f = await deps.provider.home(tui, "codex");
  if (!f.known)
    return {
      kind: "default_home",
      outcome: "unknown",
      detail: `${f.reason}: ${f.detail}`,
      completedAtMs: f.completedAtMs,
    };
  const expected = win32.join(deps.agentProfile, ".codex");
  const at = f.completedAtMs;
  if (f.value.variable === "CODEX_HOME")
    return {
      kind: "default_home",
      outcome: "refuted",
      detail: `the pane's Codex uses a private home ${f.value.path} (CODEX_HOME): the CLI would not reach it`,
      completedAtMs: at,
    };
  if (!sameHome(f.value.path, expected, "win32"))
    return {
      kind: "default_home",
      outcome: "refuted",
      detail: `the pane's home ${f.value.path} is not this account's default ${expected}`,
      completedAtMs: at,
    };
  return {
    kind: "default_home",
    outcome: "proven",
    detail: `the pane's Codex uses this account's default home ${expected}`,
    completedAtMs: at,
  };
}

/** `-c key=value` overrides, order-insensitive: the configuration a launch adds to config.toml. */
function configOverrides(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "-c" || argv[i] === "--config") out.push(argv[++i] ?? "");
    else if (argv[i]!.startsWith("--config=")) out.push(argv[i]!.slice("--config=".length));
  }
  return out.sort();
}

/** Variables a launch hands both processes: the home and what Codex reads for its accounts and config. */
const INHERITED = /^(CODEX_HOME|USERPROFILE|HOME|PATH|CODEX_[A-Z0-9_]+|OPENAI_[A-Z0-9_]+)$/;

/**
 * The dedicated app-server inherits the TUI's launch: the same cwd, the same CODEX_HOME and
 * Codex/OpenAI variables, the same `-c` configuration and no profile, and it listens through
 * `app-server --listen ws://` on loopback (its listener itself is the pane proof's).
 */
export async function launchInheritanceProof(
  deps: WindowsControlDeps,
  tui: ProcessIdentity,
  backend: ProcessIdentity,
): Promise<ProofFact> {
  const [tArgv, bArgv, tCwd, bCwd, tEnv, bEnv] = await Promise.all([
    deps.provider.commandLine(tui),
    deps.provider.commandLine(backend),
    deps.provider.cwd(tui),
    deps.provider.cwd(backend),
    deps.provider.environment(tui),
    deps.provider.environment(backend),
  ]);
  const facts = [tArgv, bArgv, tCwd, bCwd, tEnv, bEnv];
  const at = Math.max(...facts.map((f) => f.completedAtMs));
  const unknown = facts.find((f) => !f.known);
  if (unknown && !unknown.known)
    return {
      kind: "launch_inheritance",
      outcome: "unknown",
      detail: `${unknown.reason}: ${unknown.detail}`,
      completedAtMs: at,
    };
  if (!tArgv.known || !bArgv.known || !tCwd.known || !bCwd.known || !tEnv.known || !bEnv.known)
    throw new Error("unreachable");
  const problems: string[] = [];
  const b = bArgv.value.argv;
  const sub = b.indexOf("app-server");
  const listen = b[b.indexOf("--listen") + 1] ?? "";
  if (sub < 0 || !/^ws:\/\/(127\.\d+\.\d+\.\d+|\[::1\]):\d+\/?$/.test(listen))
    problems.push(`the backend is not \`codex app-server --listen ws://<loopback>:PORT\` (${b.slice(1).join(" ")})`);
  if (codexLaunchFromArgs(b.slice(sub + 1)).profile !== undefined) problems.push("the backend runs a profile (-p)");
  if (!sameHome(tCwd.value, bCwd.value, "win32"))
    problems.push(`cwd differs: TUI ${tCwd.value}, backend ${bCwd.value}`);
  const t = configOverrides(tArgv.value.argv).join("\n");
  if (t !== configOverrides(b).join("\n"))
    problems.push("the -c configuration differs between the TUI and the backend");
  const names = new Set([...tEnv.value.keys(), ...bEnv.value.keys()].filter((k) => INHERITED.test(k)));
  for (const k of names) if (tEnv.value.get(k) !== bEnv.value.get(k)) problems.push(`${k} differs`);
  if (problems.length)
    return { kind: "launch_inheritance", outcome: "refuted", detail: problems.join("; "), completedAtMs: at };
  return {
    kind: "launch_inheritance",
    outcome: "proven",
    detail: `the backend inherits the TUI's cwd, home, configuration and ${names.size} Codex variables`,
    completedAtMs: at,
  };
}

/** Just before dispatch: the pane is the one recorded, and the home is still the one proven. */
export async function beforeDispatch(
  deps: WindowsControlDeps,
  seat: SeatRecord,
  o: { plan: WindowsControlPlan; tui: ProcessIdentity; backend?: ProcessIdentity | undefined; codexHome: string },
): Promise<ProofFact[]> {
  if (!deps.host || !seat.pane)
    return [
      proof(deps.clock, "pane_identity", "unknown", "unsupported: the seat has no pane host to prove its pane with"),
    ];
  const { paneId, terminalId, sessionId } = seat.pane;
  const req = {
    pane: { paneId, terminalId, sessionId },
    tui: o.tui,
    backend: o.backend ?? o.tui,
    order: "backend_first" as const,
    harness: "codex" as const,
    home: o.codexHome,
    connection: { localAddress: "", localPort: 0, remoteAddress: "", remotePort: 0 },
  };
  const pd = { host: deps.host, provider: deps.provider, clock: deps.clock };
  const home = o.plan.kind === "cli_queue" ? defaultHomeProof(deps, o.tui) : privateHome(pd, req);
  return Promise.all([paneIdentity(pd, req), home]);
}

/** The longest message given to the CLI: a Windows command line holds 32 767 characters. */
export const CLI_MAX_MESSAGE = 8000;

/**
 * `codex queue --thread ID --message TEXT` through the native codex.exe (never a .cmd shim:
 * cmd.exe would interpret the text), with CODEX_HOME removed so the CLI uses this account's
 * default home, the one just proven. Once the CLI has started, a failure is `unconfirmed`:
 * it may have queued, and it is never run again.
 */
export async function queueViaCli(
  run: CommandRunner,
  o: { codexExe: string; threadId: string; text: string },
): Promise<NativeWriteResult> {
  if (!/\.exe$/i.test(o.codexExe))
    return {
      result: AgentResult.NotSent,
      reason: "no_native_cli",
      detail: `${o.codexExe} is not the native codex.exe; nothing was run`,
    };
  if (o.text.length > CLI_MAX_MESSAGE)
    return {
      result: AgentResult.NotSent,
      reason: "message_too_long_for_cli",
      detail: `${o.text.length} characters; the CLI path takes at most ${CLI_MAX_MESSAGE}`,
    };
  // Windows variable names ignore case: every spelling of CODEX_HOME goes.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.toUpperCase() !== "CODEX_HOME"));
  const r = await run(o.codexExe, ["queue", "--thread", o.threadId, "--message", o.text], { env, timeoutMs: 30_000 });
  if (r.isMissing)
    return {
      result: AgentResult.NotSent,
      reason: "no_native_cli",
      detail: `${o.codexExe} is not there; nothing was run`,
    };
  if (r.code === 0)
    return {
      result: AgentResult.Queued,
      nativeReceiptId: `${o.threadId}/queue/cli`,
      detail: `codex queue accepted it: ${r.stdout.trim().slice(0, 200)}`,
    };
  return {
    result: AgentResult.Unconfirmed,
    reason: "cli_failed",
    detail: `codex queue exited ${r.code} after it started; it may have queued: ${r.stderr.trim().slice(0, 200)}`,
  };
}
