/**
 * Issue 36 (RSS per linked agent, ADR 0042): a controller on PostgreSQL bounds the old generation's growth.
 * Issue 17 (`memory.up_controller_rss_mb` ≤ 200, the idle agent ≤ 80 MB; ADR 0015 amendment): the
 * young-generation cap takes effect when set at run time, before allocation grows the space —
 * the premise of setting it in the CLI before the controller's modules load. In a fresh Node
 * process (the compiled module, as the CLI runs it), the same allocation leaves the young
 * generation at V8's 2 × 16 MB without the cap and at a few MB with it. And the CLI decides the
 * cap from the raw argv before its modules load (cli/early-budget.ts).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { commandIn } from "../../../shared/heap-budget.js";

const MODULE = fileURLToPath(new URL("../../../dist/shared/heap-budget.js", import.meta.url));
const CLI = fileURLToPath(new URL("../../../dist/cli/main.js", import.meta.url));
const EARLY = fileURLToPath(new URL("../../../dist/cli/early-budget.js", import.meta.url));

function newSpaceMbAfterAllocating(capped: boolean): number {
  const program = `
    ${capped ? `const { keepYoungGenerationSmall } = await import(${JSON.stringify(MODULE)}); keepYoungGenerationSmall();` : ""}
    const { getHeapSpaceStatistics } = await import("node:v8");
    const kept = [];
    for (let i = 0; i < 300000; i++) { const o = { i, s: "x" + i }; if (i % 3 === 0) kept.push(o); }
    const s = getHeapSpaceStatistics().find((x) => x.space_name === "new_space");
    process.stdout.write(String(s.space_size / 2 ** 20) + " " + kept.length);
  `;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", program], { encoding: "utf8" });
  return Number(out.split(" ")[0]);
}

describe("the young generation's cap (issue 17, ADR 0015)", () => {
  it("issue 17: set at run time before the allocations, it keeps the young generation near its initial size", () => {
    const uncapped = newSpaceMbAfterAllocating(false);
    const capped = newSpaceMbAfterAllocating(true);
    expect(uncapped).toBeGreaterThanOrEqual(16);
    expect(capped).toBeLessThanOrEqual(4);
  });
});

/** The heap in use after a live set and five times its garbage, under the budget `command` gets. */
function heapUsedMbAfterAllocating(command: string, databaseUrl: string | undefined): number {
  const program = `
    const { budgetMemoryFor } = await import(${JSON.stringify(MODULE)});
    budgetMemoryFor(${JSON.stringify(command)}, { databaseUrl: ${JSON.stringify(databaseUrl)} });
    const live = [];
    let garbage = [];
    for (let i = 0; i < 400000; i++) {
      live.push({ i, s: "live " + i, pair: [i, i] });
      for (let k = 0; k < 5; k++) garbage.push({ k, s: "garbage " + i });
      if (garbage.length > 200000) garbage = [];
    }
    process.stdout.write(String(process.memoryUsage().heapUsed / 2 ** 20) + " " + live.length);
  `;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", program], { encoding: "utf8" });
  return Number(out.split(" ")[0]);
}

describe("the old generation's bound (issue 36, ADR 0042)", () => {
  it("issue 36: a controller on PostgreSQL keeps less garbage beside the same live set than a command without a budget", () => {
    const unbounded = heapUsedMbAfterAllocating("status", undefined);
    const bounded = heapUsedMbAfterAllocating("controller", "postgres://127.0.0.1/clankie");
    // Measured: 186–203 MB without the bound, 135–136 MB with it.
    expect(bounded).toBeLessThan(unbounded * 0.85);
  });
});

function spawnSyncText(args: string[]): string {
  const r = spawnSync(process.execPath, args, { encoding: "utf8", timeout: 20_000 });
  return `${r.stdout}${r.stderr}`;
}

describe("the cap decided before the CLI loads (issue 17, ADR 0015)", () => {
  const GLOBALS = ["--state-dir", "--log-level", "--controller"];

  it("issue 17: finds the command past the global options and their values, in both forms", () => {
    expect(commandIn(["agent", "--controller", "https://c:7421", "--state-dir", "/s"], GLOBALS)).toEqual({
      command: "agent",
      databaseUrl: undefined,
    });
    expect(commandIn(["--state-dir", "agent", "--log-level=debug", "up"], GLOBALS)).toEqual({
      command: "up",
      databaseUrl: undefined,
    });
    expect(commandIn(["--json", "controller", "--database-url", "postgres://h/db"], GLOBALS)).toEqual({
      command: "controller",
      databaseUrl: "postgres://h/db",
    });
    expect(commandIn(["up", "--database-url=postgres://h/db"], GLOBALS)).toEqual({
      command: "up",
      databaseUrl: "postgres://h/db",
    });
  });

  it("issue 17: leaves the decision to commander when it cannot read the line", () => {
    expect(commandIn(["--machine", "agent"], GLOBALS)).toBeUndefined();
    expect(commandIn(["-h"], GLOBALS)).toBeUndefined();
    expect(commandIn([], GLOBALS)).toBeUndefined();
    expect(commandIn(["--", "agent"], GLOBALS)).toBeUndefined();
  });

  it("issue 17: knows every global option of the real CLI that takes a value (its --help)", async () => {
    const help = execFileSync(process.execPath, [CLI, "--help"], { encoding: "utf8" });
    const withValue = [...help.matchAll(/^\s+(--[a-z-]+) <[a-z]+>/gm)].map((m) => m[1]);
    const { GLOBAL_OPTIONS_WITH_VALUE } = (await import(EARLY)) as { GLOBAL_OPTIONS_WITH_VALUE: readonly string[] };
    expect(withValue.length).toBeGreaterThan(0);
    expect([...GLOBAL_OPTIONS_WITH_VALUE].sort()).toEqual(withValue.sort());
  });

  it("issue 17: `clankie agent` has the cap before the CLI's modules load; run without the entry, it has not", () => {
    // A preload reports the young generation as the process exits (here: the agent refuses
    // to start, not enrolled, after its action's modules have loaded).
    const probe = `import { getHeapSpaceStatistics } from "node:v8"; process.on("exit", () => { const s = getHeapSpaceStatistics().find((x) => x.space_name === "new_space"); process.stderr.write("NEW_SPACE " + s.space_size / 2 ** 20 + "\\n"); });`;
    const newSpaceMb = (entry: string) => {
      const out = spawnSyncText([
        "--import",
        `data:text/javascript,${encodeURIComponent(probe)}`,
        entry,
        "agent",
        "--controller",
        "https://127.0.0.1:9",
        "--state-dir",
        "/nonexistent/clankie-test",
      ]);
      return Number(/NEW_SPACE (\S+)/.exec(out)?.[1]);
    };
    expect(newSpaceMb(CLI)).toBeLessThanOrEqual(4);
    expect(newSpaceMb(CLI.replace(/main\.js$/, "cli.js"))).toBeGreaterThanOrEqual(8);
  });
});
