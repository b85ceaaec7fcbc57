/** `clankie agent`: a node agent, until SIGINT/SIGTERM. Loads no database code. */
import { readFileSync } from "node:fs";
import { FleetError, ErrorCode } from "../../shared/errors.js";
import type { Logger } from "../../shared/logger.js";

export interface AgentFlags {
  stateDir: string;
  controllerUrl: string;
  fleetTokenFile: string | undefined;
  machine: string | undefined;
  host: string;
  port: number;
  /** tmux | herdr | none: where the agent discovers harness seats. */
  paneHost?: string | undefined;
  herdrSocket?: string | undefined;
  tmuxSocket?: string | undefined;
}

export async function runAgent(f: AgentFlags, logger: Logger, env: NodeJS.ProcessEnv): Promise<{ close(): Promise<void>; endpoint: string; registered: Promise<void> }> {
  const fleetToken = f.fleetTokenFile ? readFileSync(f.fleetTokenFile, "utf8").trim() : env.CLANKIE_FLEET_TOKEN;
  if (!fleetToken) throw new FleetError(ErrorCode.Unauthenticated, "the agent needs the fleet token: --fleet-token-file FILE or CLANKIE_FLEET_TOKEN");
  const { compileAgentConfig } = await import("../../node-agent/config.js");
  const { startAgent } = await import("../../node-agent/main.js");
  const config = compileAgentConfig({ stateDir: f.stateDir, controllerUrl: f.controllerUrl, fleetToken, machine: f.machine, host: f.host, port: f.port, paneHost: f.paneHost, herdrSocket: f.herdrSocket, tmuxSocket: f.tmuxSocket, env });
  const agent = await startAgent(config, logger);
  return { close: () => agent.close(), endpoint: agent.endpoint, registered: agent.link.registered };
}
