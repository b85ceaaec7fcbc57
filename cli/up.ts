/**
 * `clankie up`: controller + one local node agent (its own process) + embedded database,
 * on loopback. The agent gets a pane host found by itself (Herdr, tmux) unless one was chosen.
 * Prints how to connect a lead; with --json, exactly one JSON line.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { ListMachinesRequestSchema } from "../shared/gen/clankie/fleet/v1/status_pb.js";
import type { Logger } from "../shared/logger.js";
import { FleetError, ErrorCode, InvalidArgumentError } from "../shared/errors.js";
import { startFromFlags, type ControllerFlags } from "./run-controller.js";
import { ownerClients } from "../shared/owner-client.js";
import { emit, type OutputOptions } from "./output.js";
import { bridgeCommand, leadConfigLines as bridgeConfigLines } from "./lead-configs.js";
import { discoverPaneHost, type Discovered } from "./pane-discovery.js";
import { progress } from "./progress.js";
import { leadConfigLines } from "./lead-config.js";
import { selfCommand } from "./self-command.js";
import { DEFAULT_CONVERSATION, defaultStateDir, leadTokenPath, loadController } from "../controller/for-cli.js";
import { loadIdentity } from "../node-agent/for-cli.js";

export interface UpFlags extends ControllerFlags {
  machine: string;
  /** auto (default) | tmux | herdr | none */
  paneHost?: string | undefined;
  herdrSocket?: string | undefined;
  tmuxSocket?: string | undefined;
}

const AGENT_READY_TIMEOUT_MS = 30_000;

async function choosePaneHost(f: UpFlags, env: NodeJS.ProcessEnv): Promise<Discovered> {
  const chosen = f.paneHost ?? "auto";
  if (chosen === "auto") return discoverPaneHost({ herdrSocket: f.herdrSocket, tmuxSocket: f.tmuxSocket, env });
  if (chosen === "tmux" || chosen === "herdr" || chosen === "none")
    return { paneHost: chosen, reason: "chosen with --pane-host" };
  throw new InvalidArgumentError(`--pane-host must be auto, tmux, herdr or none, got ${JSON.stringify(chosen)}`);
}

export async function up(
  f: UpFlags,
  out: OutputOptions,
  logger: Logger,
  logLevel: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<() => Promise<void>> {
  const shown = progress(out);
  const panes = await choosePaneHost(f, env);
  shown.step("opening the journal (the first start initialises the embedded database, about 10 s)");
  const controller = await startFromFlags(f, logger).finally(() => shown.done());
  const cliPath = fileURLToPath(new URL("./main.js", import.meta.url));
  let stopping = false;
  let child: ChildProcess | undefined;
  let backoffMs = 500;
  const paneArgs = [
    "--pane-host",
    panes.paneHost,
    ...(panes.paneHost === "herdr" && f.herdrSocket ? ["--herdr-socket", f.herdrSocket] : []),
    ...(panes.paneHost === "tmux" && f.tmuxSocket ? ["--tmux-socket", f.tmuxSocket] : []),
  ];

  // The local agent enrolls like any other machine: a join token on its first start (in its
  // environment, never its command line), its own key pair and certificate, mutual TLS.
  const agentDir = join(f.stateDir, "agent");
  const known = loadIdentity(agentDir);
  let joinToken: string | undefined =
    known && known.fleetId === controller.fleetId && known.machine === f.machine
      ? undefined
      : await controller.issueJoinToken(f.machine);
  const spawnAgent = () => {
    const env = { ...process.env, ...(joinToken ? { CLANKIE_JOIN_TOKEN: joinToken } : {}) };
    joinToken = undefined;
    child = spawn(
      process.execPath,
      [
        cliPath,
        "agent",
        "--state-dir",
        agentDir,
        "--controller",
        controller.agentUrl,
        "--machine",
        f.machine,
        "--log-level",
        logLevel,
        ...paneArgs,
        "--tethered",
      ],
      { stdio: ["pipe", "ignore", "inherit"], env },
    );
    child.once("exit", (code, signal) => {
      if (stopping) return;
      logger.warn("local agent exited; restarting", { code, signal, restartInMs: backoffMs });
      setTimeout(spawnAgent, backoffMs).unref();
      backoffMs = Math.min(backoffMs * 2, 30_000);
    });
  };
  spawnAgent();

  const close = async () => {
    stopping = true;
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    await controller.close();
  };

  // Ready means this run's agent has registered: a row left by an earlier run may still
  // look online, so the machine must have been seen since this process started.
  shown.step("starting the local agent and waiting for it to register");
  const clients = ownerClients(f.stateDir, controller.url);
  const startedAt = Date.now();
  const deadline = startedAt + AGENT_READY_TIMEOUT_MS;
  try {
    for (;;) {
      const res = await clients.status.listMachines(create(ListMachinesRequestSchema, {}));
      if (
        res.machines.some(
          (m) => m.name === f.machine && m.online && Number(m.lastSeenAgeMs) < Date.now() - startedAt,
        ) &&
        controller.linked(f.machine)
      )
        break;
      if (Date.now() > deadline) {
        await close();
        throw new FleetError(
          ErrorCode.AgentUnreachable,
          `the local agent did not register within ${AGENT_READY_TIMEOUT_MS / 1000} s`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    shown.done();
  }

  // The JSON line keeps its documented fields; the dashboard's URL carries no token there.
  // Off loopback, agents and owner tools verify the controller with the fleet CA in caFile.
  const { isLoopbackHost } = await loadController();
  const ready = {
    mcpUrl: controller.mcpUrl,
    token: controller.leadToken,
    statusUrl: controller.statusUrl,
    dashboardUrl: controller.dashboardUrl,
    agentUrl: controller.agentUrl,
    ...(isLoopbackHost(f.host) ? {} : { caFile: controller.caFile }),
    bridge: bridgeCommand(f.stateDir),
  };
  const lines = leadConfigLines(ready.mcpUrl, ready.token);
  const me = selfCommand(env);
  const stateFlag = f.stateDir === defaultStateDir(env) ? "" : ` --state-dir ${f.stateDir}`;
  const defaultTokenFile = leadTokenPath(f.stateDir, DEFAULT_CONVERSATION);
  emit(out, ready, () =>
    [
      "Clankie Fleet is up.",
      `  MCP (leads):     ${ready.mcpUrl}`,
      `  lead token:      ${ready.token}   (conversation global-default; kept in ${defaultTokenFile})`,
      `  status (gRPC):   ${ready.statusUrl}   (owner token in ${join(f.stateDir, "owner.token")}; reflection on: grpcurl -plaintext ${new URL(ready.statusUrl).host} list)`,
      `  dashboard:       ${ready.dashboardUrl}#token=${controller.ownerToken}`,
      `  metrics:         ${controller.metricsUrl}   (Prometheus; bearer = the owner token)`,
      `  database:        ${controller.database.driver} ${controller.database.location}`,
      `  local agent:     machine ${f.machine}, panes: ${panes.paneHost} (${panes.reason}); enrolled, agents dial ${ready.agentUrl}, fleet CA in ${controller.caFile}`,
      "",
      "Connect a lead (paste one line; its harness starts the stdio bridge `clankie mcp`, which reads the lead token from the state directory: no token on a command line):",
      ...bridgeConfigLines(ready.bridge),
      "Or over HTTP (the token is stored in that client's own config):",
      `  Claude Code (HTTP):  ${lines.claude}`,
      `  Codex (HTTP):        ${lines.codex}`,
      "",
      `Try it:  ${me} seat add mailbox inbox${stateFlag}   then message_seat {seat:"inbox", message:"hello"}   then ${me} mailbox read inbox${stateFlag}`,
      "Stop with Ctrl-C.",
    ].join("\n"),
  );
  return close;
}
