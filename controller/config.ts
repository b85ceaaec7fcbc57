/** The controller's configuration, compiled once; nothing below main.ts reads the environment. */
export interface ControllerConfig {
  stateDir: string;
  host: string;
  port: number;
  /** A PostgreSQL URL; undefined means the embedded PGlite in the state directory. */
  databaseUrl: string | undefined;
  heartbeatIntervalMs: number;
  deliverTimeoutMs: number;
  /** How long in-flight calls may finish after a stop begins; then they answer uncertain. */
  shutdownGraceMs: number;
  /** Fault injection for the crash-window suites only (CLANKIE_FAULT). */
  fault: "hang_after_admit" | "hang_after_agent_reply" | undefined;
}

export const DEFAULT_PORT = 7420;

export function compileControllerConfig(o: Partial<ControllerConfig> & { stateDir: string }): ControllerConfig {
  return {
    stateDir: o.stateDir,
    host: o.host ?? "127.0.0.1",
    port: o.port ?? DEFAULT_PORT,
    databaseUrl: o.databaseUrl || undefined,
    heartbeatIntervalMs: o.heartbeatIntervalMs ?? 5_000,
    deliverTimeoutMs: o.deliverTimeoutMs ?? 20_000,
    shutdownGraceMs: o.shutdownGraceMs ?? 5_000,
    fault: o.fault,
  };
}
