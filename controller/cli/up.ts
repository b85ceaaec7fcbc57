/**
 * `clankie up`: controller + one local node agent (its own process) + embedded database,
 * on loopback. Prints how to connect a lead; with --json, exactly one JSON line.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { ListMachinesRequestSchema } from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import type { Logger } from "../../shared/logger.js";
import { FleetError, ErrorCode } from "../../shared/errors.js";
import { startFromFlags, type ControllerFlags } from "./run-controller.js";
import { ownerClients } from "./owner-client.js";
import { emit, type OutputOptions } from "./output.js";

export interface UpFlags extends ControllerFlags {
  machine: string;
}

const AGENT_READY_TIMEOUT_MS = 30_000;

export async function up(f: UpFlags, out: OutputOptions, logger: Logger, logLevel: string): Promise<() => Promise<void>> {
  const controller = await startFromFlags(f, logger);
  const cliPath = fileURLToPath(new URL("./main.js", import.meta.url));
  let stopping = false;
  let child: ChildProcess | undefined;
  let backoffMs = 500;

  const spawnAgent = () => {
    child = spawn(
      process.execPath,
      [cliPath, "agent", "--state-dir", join(f.stateDir, "agent"), "--controller", controller.url, "--fleet-token-file", join(f.stateDir, "fleet.token"), "--machine", f.machine, "--log-level", logLevel, "--tethered"],
      { stdio: ["pipe", "ignore", "inherit"] },
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
  const clients = ownerClients(f.stateDir, controller.url);
  const startedAt = Date.now();
  const deadline = startedAt + AGENT_READY_TIMEOUT_MS;
  for (;;) {
    const res = await clients.status.listMachines(create(ListMachinesRequestSchema, {}));
    if (res.machines.some((m) => m.name === f.machine && m.online && Number(m.lastSeenAgeMs) < Date.now() - startedAt)) break;
    if (Date.now() > deadline) {
      await close();
      throw new FleetError(ErrorCode.AgentUnreachable, `the local agent did not register within ${AGENT_READY_TIMEOUT_MS / 1000} s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  // The JSON line keeps its documented fields; the dashboard's URL carries no token there.
  const ready = { mcpUrl: controller.mcpUrl, token: controller.leadToken, statusUrl: controller.statusUrl, dashboardUrl: controller.dashboardUrl };
  emit(out, ready, () =>
    [
      "Clankie Fleet is up.",
      `  MCP (leads):     ${ready.mcpUrl}`,
      `  lead token:      ${ready.token}   (conversation global-default)`,
      `  status (gRPC):   ${ready.statusUrl}   (owner token in ${join(f.stateDir, "owner.token")})`,
      `  dashboard:       ${ready.dashboardUrl}#token=${controller.ownerToken}`,
      `  database:        ${controller.database.driver} ${controller.database.location}`,
      `  local agent:     machine ${f.machine}`,
      "",
      "Connect a lead:",
      `  Claude Code:  claude mcp add --transport http clankie ${ready.mcpUrl} --header "Authorization: Bearer ${ready.token}"`,
      `  Codex:        CLANKIE_TOKEN=${ready.token} codex mcp add clankie --url ${ready.mcpUrl} --bearer-token-env-var CLANKIE_TOKEN`,
      "",
      "Try it:  clankie seat add mailbox inbox   then message_seat {seat:\"inbox\", message:\"hello\"}   then clankie mailbox read inbox",
      "Stop with Ctrl-C.",
    ].join("\n"),
  );
  return close;
}
