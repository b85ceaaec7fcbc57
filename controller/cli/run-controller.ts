/** `clankie controller`: the controller alone, until SIGINT/SIGTERM. */
import { compileControllerConfig, DEFAULT_PORT } from "../config.js";
import { startController, type RunningController } from "../main.js";
import type { Logger } from "../../shared/logger.js";

export interface ControllerFlags {
  stateDir: string;
  host: string;
  port: number;
  databaseUrl: string | undefined;
  deliverTimeoutMs?: number | undefined;
  fault?: "hang_after_admit" | "hang_after_agent_reply" | undefined;
}

export async function startFromFlags(f: ControllerFlags, logger: Logger): Promise<RunningController> {
  return startController(compileControllerConfig({ stateDir: f.stateDir, host: f.host, port: f.port, databaseUrl: f.databaseUrl, ...(f.deliverTimeoutMs ? { deliverTimeoutMs: f.deliverTimeoutMs } : {}), fault: f.fault }), logger);
}


export { DEFAULT_PORT };
