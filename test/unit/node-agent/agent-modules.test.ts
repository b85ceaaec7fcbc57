/**
 * Issue 17's memory goals (the idle agent ≤ 80 MB, `memory.agent_rss_mb`): the node agent's
 * module graph leaves out the MCP SDK's server, zod and their JSON-schema helpers. Those serve
 * the worker-side tools, which run in the seat's own processes, never in the agent; one
 * constant imported from the Claude channel's server once loaded ~170 modules (and ~10 MB) into
 * every idle agent. In a fresh Node process with a load hook, as the CLI runs the agent: the
 * compiled node-agent/main.js is imported, and every module URL it loads is recorded.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const DIST = fileURLToPath(new URL("../../../dist/", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "clankie-agent-modules-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Packages only the worker-side tools need.
const WORKER_ONLY = [
  "/node_modules/@modelcontextprotocol/sdk/",
  "/node_modules/zod/",
  "/node_modules/zod-to-json-schema/",
  "/node_modules/ajv/",
];

function modulesLoadedBy(entry: string, name: string): string[] {
  const log = join(dir, `${name}.log`);
  // The hook runs on the loader's own thread; it appends each URL to the file the env names.
  const hook = `import { appendFileSync } from "node:fs"; export async function load(url, context, next) { appendFileSync(process.env.MODULE_LOG, url + "\\n"); return next(url, context); }`;
  const program = `
    const { register } = await import("node:module");
    register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});
    await import(${JSON.stringify(join(DIST, entry))});
    process.exit(0);
  `;
  execFileSync(process.execPath, ["--input-type=module", "-e", program], {
    env: { ...process.env, MODULE_LOG: log },
    encoding: "utf8",
  });
  return readFileSync(log, "utf8").split("\n").filter(Boolean);
}

describe("the node agent's modules (issue 17, idle agent memory)", () => {
  it("the check sees the worker-side packages where they are used: the Claude channel's server loads them", () => {
    const loaded = modulesLoadedBy("worker/claude-channel.js", "channel");
    expect(loaded.some((u) => u.includes("/node_modules/@modelcontextprotocol/sdk/"))).toBe(true);
    expect(loaded.some((u) => u.includes("/node_modules/zod/"))).toBe(true);
  });

  it("issue 17: the agent's own graph loads none of the MCP SDK, zod or their schema helpers", () => {
    const loaded = modulesLoadedBy("node-agent/main.js", "agent");
    expect(loaded.some((u) => u.endsWith("/node-agent/main.js"))).toBe(true);
    expect(loaded.filter((u) => WORKER_ONLY.some((p) => u.includes(p)))).toEqual([]);
  });
});
