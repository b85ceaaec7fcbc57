// A logging MCP server (stdio) for pinning what the real Codex sends its MCP servers: every
// message it receives, its own pid, parent and environment go as JSON lines to the file named
// by argv[2] (Codex clears an MCP server's environment, so the path cannot come from there).
// It offers one tool, `ping`, which answers "pong".
import { appendFileSync } from "node:fs";

const out = process.argv[2];
const log = (o) => appendFileSync(out, JSON.stringify({ pid: process.pid, ppid: process.ppid, ...o }) + "\n");
log({ start: true, env: process.env });
let buf = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => {
  buf += d;
  for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (!line.trim()) continue;
    const m = JSON.parse(line);
    log({ msg: m });
    const reply = (result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result }) + "\n");
    if (m.method === "initialize")
      reply({
        protocolVersion: m.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "logmcp", version: "0" },
      });
    else if (m.method === "tools/list")
      reply({ tools: [{ name: "ping", description: "ping", inputSchema: { type: "object", properties: {} } }] });
    else if (m.method === "tools/call") reply({ content: [{ type: "text", text: "pong" }] });
    else if (m.id !== undefined) reply({});
  }
});
