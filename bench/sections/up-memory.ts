/**
 * Section 6: the `clankie up` controller as a new user starts it (embedded PGlite, one agent
 * child, a mailbox seat added with the real CLI), after N deliveries through the official MCP
 * client: its RSS (VmRSS) and peak (VmHWM). Reported as memory.up_controller_rss_mb.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CLI, removeScratch, scratchDir } from "../paths.js";
import { rssOf, sampleRss, spawnClankie } from "../processes.js";

const run = promisify(execFile);

export interface UpMemoryConfig {
  deliveries: number;
  settleSeconds: number;
}

export async function runUpMemory(cfg: UpMemoryConfig) {
  const stateDir = scratchDir("up-memory");
  const env = { ...process.env };
  delete env.DATABASE_URL;
  const up = await spawnClankie(["up", "--state-dir", stateDir, "--port", "0"], env);
  let client: Client | undefined;
  try {
    const atStart = rssOf(up.child.pid!);
    await run(process.execPath, [CLI, "seat", "add", "mailbox", "inbox", "--state-dir", stateDir, "--json"], { env });
    client = new Client({ name: "clankie-bench-up-memory", version: "0.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(up.ready.mcpUrl!), {
        requestInit: { headers: { authorization: `Bearer ${up.ready.token}` } },
      }),
    );
    let delivered = 0;
    for (let i = 0; i < cfg.deliveries; i++) {
      const res = await client.callTool({
        name: "message_seat",
        arguments: { seat: "inbox", message: `up memory bench ${i}` },
      });
      if ((res.structuredContent as { outcome?: string } | undefined)?.outcome === "delivered") delivered++;
    }
    const after = await sampleRss(up.child.pid!, cfg.settleSeconds * 1000);
    return {
      up_controller_rss_mb: after.rss_mb,
      up_controller_peak_rss_mb: after.peak_rss_mb,
      up_controller_at_start_rss_mb: atStart.rss_mb,
      up_deliveries: { asked: cfg.deliveries, delivered },
      up_note:
        "`clankie up` on its default embedded PGlite: the up process is the controller (the agent is its child); RSS after the deliveries (VmRSS), peak over its life (VmHWM)",
    };
  } finally {
    await client?.close().catch(() => {});
    await up.stop();
    removeScratch(stateDir);
  }
}
