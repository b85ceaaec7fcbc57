/**
 * The MCP server configs `clankie up` prints for a lead's harness: Claude Code and Codex both
 * start `clankie mcp` (command + args). The bridge reads the lead token from the state
 * directory, so no token is ever on a command line or in a harness config file.
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export interface BridgeCommand {
  command: string;
  args: string[];
}

/**
 * The command a harness runs to start the bridge for this state directory. The harness starts
 * it later, from its own environment, where CLANKIE_STATE_DIR is usually not set: so any state
 * dir but ~/.clankie is named on the line, even when this shell chose it through the variable.
 */
export function bridgeCommand(
  stateDir: string,
  home: string = homedir(),
  fleet: { urls?: string[]; conversation?: string } = {},
): BridgeCommand {
  const cli = fileURLToPath(new URL("./main.js", import.meta.url));
  const args = [cli, "mcp"];
  if (resolve(stateDir) !== join(home, ".clankie")) args.push("--state-dir", resolve(stateDir));
  if (fleet.conversation) args.push("--conversation", fleet.conversation);
  // Several replicas of one fleet (ADR 0037): the bridge moves to the next when one fails.
  if (fleet.urls?.length) args.push("--url", fleet.urls.join(","));
  return { command: process.execPath, args };
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function tomlString(s: string): string {
  return JSON.stringify(s);
}

/**
 * The Codex line writes the table itself rather than `codex mcp add`: only the table can say
 * `required = true`, without which `codex exec`'s first turn may start before the bridge has
 * listed its tools (the model is then offered none). Like the HTTP line, it removes an older
 * clankie table first, so pasting it twice leaves valid TOML.
 */
export function codexBridgeLine(b: BridgeCommand): string {
  const dir = '"${CODEX_HOME:-$HOME/.codex}"';
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return (
    `codex mcp remove clankie >/dev/null 2>&1; mkdir -p ${dir} && ` +
    `printf '\\n[mcp_servers.clankie]\\ncommand = %s\\nargs = [%s]\\nrequired = true\\n' ${q(tomlString(b.command))} ${q(b.args.map(tomlString).join(", "))} >> ${dir}/config.toml`
  );
}

/** Human-readable lines: the one-line `mcp add` for each harness and the config-file form. */
export function leadConfigLines(b: BridgeCommand): string[] {
  const argv = [b.command, ...b.args].map(shellQuote).join(" ");
  return [
    `  Claude Code:  claude mcp add --scope user clankie -- ${argv}`,
    `                (--scope user: in every project; without it, only in this folder)`,
    `                (.mcp.json: ${JSON.stringify({ mcpServers: { clankie: { command: b.command, args: b.args } } })})`,
    `  Codex:        ${codexBridgeLine(b)}`,
    `                (it writes to config.toml: [mcp_servers.clankie] command = ${tomlString(b.command)}, args = [${b.args.map(tomlString).join(", ")}], required = true;`,
    `                 required: codex waits for the bridge's tools before the first turn)`,
  ];
}
