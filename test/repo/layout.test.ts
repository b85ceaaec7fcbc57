/**
 * House rules the code must keep: each source file opens with a comment saying what it is
 * for, stays under 400 lines, and imports only across allowed boundaries. Each program has its
 * own top-level folder (issue 33 item 3): the controller (controller/), the node agent
 * (node-agent/), the `clankie` CLI (cli/), the lead's stdio bridge (bridge/) and the tools that
 * run inside a hired harness (worker/), with shared/ for what more than one of them uses.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SOURCE_DIRS = ["shared", "controller", "node-agent", "cli", "bridge", "worker"];

function sources(): string[] {
  return SOURCE_DIRS.flatMap((d) =>
    readdirSync(join(ROOT, d), { recursive: true })
      .map(String)
      // The dashboard's browser modules (.js) keep the same house rules.
      .filter((f) => (f.endsWith(".ts") || f.endsWith(".js")) && !f.startsWith("gen/") && !f.includes("/gen/"))
      .map((f) => join(d, f)),
  ).filter((f) => !f.startsWith("shared/gen/"));
}

function imports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  return [...text.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]!);
}

/**
 * Which program folders each may import. A door is the one module through which a program
 * reaches another's code: the CLI reaches the agent and the controller only through what they
 * export for it, and the bridge (run as `clankie mcp`) the controller likewise.
 */
const PROGRAM_LINES: Record<string, { may: string[]; doors?: Record<string, string> }> = {
  shared: { may: ["shared"] },
  controller: { may: ["controller", "shared"] },
  "node-agent": { may: ["node-agent", "shared"] },
  cli: {
    may: ["cli", "bridge", "worker", "shared"],
    doors: { controller: "controller/for-cli.ts", "node-agent": "node-agent/for-cli.ts" },
  },
  bridge: { may: ["bridge", "shared"], doors: { controller: "controller/for-cli.ts" } },
  // The in-harness tools speak the agent's wire (its worker endpoint, the harnesses' links).
  worker: { may: ["worker", "node-agent", "shared"] },
};

/** The imports that cross a line PROGRAM_LINES does not open, as "from → to". */
function crossings(edges: { from: string; to: string }[]): string[] {
  const program = (path: string) => path.split("/")[0]!;
  return edges
    .filter(({ from, to }) => {
      const rules = PROGRAM_LINES[program(from)];
      const target = program(to);
      if (!rules || !(target in PROGRAM_LINES)) return false;
      return !rules.may.includes(target) && rules.doors?.[target] !== to;
    })
    .map(({ from, to }) => `${from} → ${to}`);
}

describe("repository layout", () => {
  const files = sources();

  it("every source file opens with a comment that says what it is for", () => {
    const missing = files.filter((f) => {
      const head = readFileSync(join(ROOT, f), "utf8")
        .replace(/^#!.*\n/, "")
        .trimStart();
      return !head.startsWith("/**") && !head.startsWith("//");
    });
    expect(missing).toEqual([]);
  });

  it("no source file runs over 400 lines", () => {
    const long = files.filter((f) => readFileSync(join(ROOT, f), "utf8").split("\n").length > 400);
    expect(long).toEqual([]);
  });

  it("the node agent loads no database or MCP code (the in-harness tools in worker/ may)", () => {
    const forbidden = /^(drizzle-orm|postgres|@electric-sql\/pglite|@modelcontextprotocol\/sdk)/;
    const bad = files
      .filter((f) => f.startsWith("node-agent/"))
      .flatMap((f) =>
        imports(f)
          .filter((i) => forbidden.test(i))
          .map((i) => `${f} → ${i}`),
      );
    expect(bad).toEqual([]);
  });

  it("no import crosses a program's line (the rules in PROGRAM_LINES)", () => {
    const edges = files.flatMap((f) =>
      imports(f)
        .filter((i) => i.startsWith("."))
        .map((i) => ({ from: f, to: relative(ROOT, join(ROOT, f, "..", i)).replace(/\.js$/, ".ts") })),
    );
    expect(crossings(edges)).toEqual([]);
  });

  it("the rules refuse each crossing they name, and allow the doors", () => {
    const edge = (from: string, to: string) => ({ from, to });
    const refused = [
      edge("shared/ids.ts", "controller/config.ts"),
      edge("shared/ids.ts", "cli/output.ts"),
      edge("node-agent/main.ts", "controller/config.ts"),
      edge("node-agent/main.ts", "cli/output.ts"),
      edge("node-agent/main.ts", "bridge/serve.ts"),
      edge("node-agent/main.ts", "worker/fleet-mcp.ts"),
      edge("controller/main.ts", "node-agent/config.ts"),
      edge("controller/main.ts", "cli/output.ts"),
      edge("cli/up.ts", "node-agent/config.ts"),
      edge("cli/up.ts", "controller/main.ts"),
      edge("bridge/target.ts", "controller/state-dir.ts"),
      edge("bridge/target.ts", "cli/output.ts"),
      edge("bridge/target.ts", "node-agent/for-cli.ts"),
      edge("worker/fleet-mcp.ts", "controller/for-cli.ts"),
      edge("worker/fleet-mcp.ts", "cli/output.ts"),
      edge("worker/fleet-mcp.ts", "bridge/serve.ts"),
    ];
    expect(crossings(refused)).toHaveLength(refused.length);
    const allowed = [
      edge("cli/up.ts", "node-agent/for-cli.ts"),
      edge("cli/up.ts", "controller/for-cli.ts"),
      edge("cli/mcp.ts", "bridge/serve.ts"),
      edge("cli/worker-commands.ts", "worker/fleet-mcp.ts"),
      edge("bridge/target.ts", "controller/for-cli.ts"),
      edge("bridge/target.ts", "shared/owner-client.ts"),
      edge("worker/fleet-mcp.ts", "node-agent/worker-link/worker-endpoint.ts"),
      edge("node-agent/main.ts", "shared/ids.ts"),
    ];
    expect(crossings(allowed)).toEqual([]);
  });
});
