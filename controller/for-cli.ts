/**
 * What the controller exports for the `clankie` CLI (cli/) and the lead's bridge it runs as `clankie
 * mcp` (bridge/), their one door into the controller's code: its defaults, its state directory and
 * lead-token files, and the names of its tool results, loaded with the CLI; the controller itself and
 * fleet deploy behind loaders, so that a command that runs neither never parses their modules (the
 * CLI's memory cap, ADR 0015).
 */
export { compileControllerConfig, DEFAULT_PORT } from "./config.js";
export { FAULT_POINTS, type FaultPoint } from "./delivery/faults.js";
export { RECONCILE_TOOL, SEAT_CALL_META_KEY } from "./delivery/result-bodies.js";
export { DEFAULT_LISTENER_LIMITS, type ListenerLimits } from "./http/listener.js";
export { DEFAULT_UNAUTHENTICATED_LIMITS, type UnauthenticatedLimits } from "./http/unauthenticated-budget.js";
export { HIRE_STATES } from "./hire/list.js";
export { assertConversationId, DEFAULT_CONVERSATION } from "./leads/conversations.js";
export { leadTokenPath, readLeadToken, storeLeadToken } from "./leads/token-files.js";
export { defaultStateDir } from "./state-dir.js";
export type { RunningController } from "./main.js";

/** The controller (`clankie up`, `clankie controller`). */
export async function loadController() {
  const { startController, isLoopbackHost } = await import("./main.js");
  return { startController, isLoopbackHost };
}

/** Installing an agent on a machine over SSH (`clankie fleet deploy`). */
export async function loadDeploy() {
  const [{ deploy }, { parseTarget }] = await Promise.all([
    import("./deploy/deploy.js"),
    import("./deploy/ssh-session.js"),
  ]);
  return { deploy, parseTarget };
}
