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

/** Resolves once a signal asked the process to stop and `close` finished. */
export function untilSignal(close: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    let closing = false;
    const stop = () => {
      if (closing) return;
      closing = true;
      close().finally(resolve);
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}

export { DEFAULT_PORT };
