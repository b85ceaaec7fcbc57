/** `clankie controller`: the controller alone, until SIGINT/SIGTERM. */
import {
  compileControllerConfig,
  DEFAULT_PORT,
  type FaultPoint,
  loadController,
  type RunningController,
} from "../controller/for-cli.js";
import type { Logger } from "../shared/logger.js";
import { FleetError, ErrorCode } from "../shared/errors.js";
import { frontDoorLimits, type FrontDoorFlags } from "./front-door-flags.js";

export interface ControllerFlags extends FrontDoorFlags {
  stateDir: string;
  host: string;
  port: number;
  databaseUrl: string | undefined;
  deliverTimeoutMs?: number | undefined;
  fault?: FaultPoint | undefined;
  /** The agent port (mutual TLS); default: --host, and 7421 (ephemeral when --port is 0). */
  agentHost?: string | undefined;
  agentPort?: number | undefined;
  /** The host agents are told to dial when the agent host is a wildcard. */
  agentAdvertise?: string | undefined;
  caPassphrase?: string | undefined;
  /** More names the server certificates carry (a load balancer's). */
  tlsName?: string[] | undefined;
  /** This replica's lease in the journal and its renewal interval (ADR 0036). */
  instanceLeaseMs?: number | undefined;
  instanceRenewMs?: number | undefined;
}

export async function startFromFlags(f: ControllerFlags, logger: Logger): Promise<RunningController> {
  const config = compileControllerConfig({
    stateDir: f.stateDir,
    host: f.host,
    port: f.port,
    databaseUrl: f.databaseUrl,
    ...(f.deliverTimeoutMs ? { deliverTimeoutMs: f.deliverTimeoutMs } : {}),
    fault: f.fault,
    ...(f.agentHost ? { agentHost: f.agentHost } : {}),
    ...(f.agentPort !== undefined ? { agentPort: f.agentPort } : {}),
    agentAdvertiseHost: f.agentAdvertise,
    tlsNames: f.tlsName,
    caPassphrase: f.caPassphrase,
    instanceLeaseMs: f.instanceLeaseMs,
    instanceRenewMs: f.instanceRenewMs,
    ...frontDoorLimits(f),
  });
  const { startController } = await loadController();
  try {
    return await startController(config, logger);
  } catch (e) {
    throw namePortFlag(e, config.agentPort);
  }
}

/** A clash on the agent port is fixed with --agent-port, not --port: say which flag moves it. */
function namePortFlag(e: unknown, agentPort: number): unknown {
  const err = e as NodeJS.ErrnoException & { port?: number; address?: string };
  const listen = err instanceof FleetError ? (err.cause as typeof err | undefined) : err;
  if (listen?.code !== "EADDRINUSE" || agentPort === 0 || listen.port !== agentPort) return e;
  return new FleetError(
    ErrorCode.AddressInUse,
    `the agent port ${listen.address ?? ""}:${agentPort} is taken by another process (another clankie?); stop it or choose another --agent-port`,
    { cause: listen },
  );
}

export { DEFAULT_PORT };
