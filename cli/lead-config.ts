/**
 * The one-paste lines that connect a lead client to this controller's MCP endpoint, with its
 * token kept where that client reads it: Claude Code stores `--header` in its own config
 * (`--scope user`: every project); Codex reads `http_headers` from its config.toml, so the line
 * writes that table (after removing an old one, so pasting it twice stays valid TOML).
 */
export interface LeadConfigLines {
  claude: string;
  claudeProjectOnly: string;
  codex: string;
}

/** Single quotes for sh: the URL and token are plain ASCII from us, quoted anyway. */
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export function leadConfigLines(mcpUrl: string, token: string): LeadConfigLines {
  const header = `"Authorization: Bearer ${token}"`;
  const codexDir = '"${CODEX_HOME:-$HOME/.codex}"';
  return {
    claude: `claude mcp add --transport http --scope user clankie ${mcpUrl} --header ${header}`,
    claudeProjectOnly: `claude mcp add --transport http clankie ${mcpUrl} --header ${header}`,
    codex:
      `codex mcp remove clankie >/dev/null 2>&1; mkdir -p ${codexDir} && ` +
      `printf '\\n[mcp_servers.clankie]\\nurl = "%s"\\nhttp_headers = { Authorization = "Bearer %s" }\\n' ${q(mcpUrl)} ${q(token)} >> ${codexDir}/config.toml`,
  };
}
