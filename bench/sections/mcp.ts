/**
 * Section 4: `message_seat` as a lead sees it — the official MCP client over streamable
 * HTTP to a real `clankie up` (controller + agent processes), to a mailbox seat added with
 * the real CLI. Sequential calls after a warm-up; p50/p99 of the whole round trip.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CLI, removeScratch, scratchDir } from "../paths.js";
import { spawnClankie } from "../processes.js";
import { summarize } from "../stats.js";

const run = promisify(execFile);

export interface McpConfig {
  n: number;
  warmup: number;
  /** Also measure on the embedded PGlite (always when there is no PostgreSQL). */
  pglite: boolean;
}

export async function runMcp(cfg: McpConfig, databaseUrl: string | undefined) {
  const stateDir = scratchDir("mcp");
  const env = { ...process.env };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  else delete env.DATABASE_URL;
  const up = await spawnClankie(["up", "--state-dir", stateDir, "--port", "0"], env);
  let client: Client | undefined;
  try {
    await run(process.execPath, [CLI, "seat", "add", "mailbox", "inbox", "--state-dir", stateDir, "--json"], { env });
    client = new Client({ name: "clankie-bench-lead", version: "0.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(up.ready.mcpUrl!), {
        requestInit: { headers: { authorization: `Bearer ${up.ready.token}` } },
      }),
    );
    const times: number[] = [];
    const outcomes: Record<string, number> = {};
    for (let i = 0; i < cfg.warmup + cfg.n; i++) {
      const t0 = performance.now();
      const res = await client.callTool({
        name: "message_seat",
        arguments: { seat: "inbox", message: `mcp bench message ${i}` },
      });
      const ms = performance.now() - t0;
      const outcome = String(
        (res.structuredContent as { outcome?: string } | undefined)?.outcome ?? (res.isError ? "error" : "unknown"),
      );
      if (i < cfg.warmup) continue;
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      if (outcome === "delivered") times.push(ms);
    }
    return { ...summarize(times), outcomes, database: databaseUrl ? "postgres" : "pglite" };
  } finally {
    await client?.close().catch(() => {});
    await up.stop();
    removeScratch(stateDir);
  }
}
