/**
 * What the node agent exports for the `clankie` CLI (cli/), its one door into the agent's code: the
 * agent's defaults and files, loaded with the CLI, and the agent itself and the fleet join behind
 * loaders, so that a command that runs neither never parses their modules (every CLI process, the
 * worker hooks among them, starts under the memory cap of ADR 0015).
 */
export { compileAgentConfig, defaultHerdrSocket, defaultMachineName, parseControllerUrls } from "./config.js";
export { loadIdentity } from "./identity/identity-files.js";
export { installedFile } from "./hire/launcher.js";
export { CLAUDE_PLUGIN } from "./harnesses/claude/plugin-screen.js";
export { MailboxStore } from "./mailbox/store.js";

/** The node agent (`clankie agent`). */
export async function loadAgent() {
  const { startAgent } = await import("./main.js");
  return { startAgent };
}

/** Joining the fleet with a join token, as this agent's version (`clankie agent --join`). */
export async function loadJoin() {
  const [{ joinFleet }, { AGENT_VERSION }] = await Promise.all([import("./identity/join.js"), import("./version.js")]);
  return { joinFleet, AGENT_VERSION };
}
