/**
 * V8's young generation kept near its initial size, for the processes that run on a memory
 * budget: the embedded journal's controller (`clankie up`, or a controller with no PostgreSQL
 * URL; issue 17: ≤ 200 MB after 1,000 deliveries) and the node agent (idle ≤ 80 MB). V8 doubles
 * the young generation (to 2 × 16 MB) as soon as allocation is brisk, and loading the modules is
 * brisk, so the cap is set first, in the CLI's preAction hook, before the action imports anything. Measured side by side (ADR
 * 0015 amendment): the up process 165–171 → 143–146 MB at start and 190–214 → 165–167 MB after
 * 1,000 deliveries; the agent 97–99 → 87–90 MB idle and 115 → 90–92 MB after 300; neither's CPU
 * per delivery moved beyond the noise. The flag is read when V8 grows the space, so setting it at
 * run time takes effect (from the command line V8 clamps it to 2). A controller on PostgreSQL
 * (production, where throughput is the budget) keeps V8's default.
 */
import { setFlagsFromString } from "node:v8";

export function keepYoungGenerationSmall(): void {
  setFlagsFromString("--semi-space-growth-factor=1");
}

/**
 * The command a raw argv names, and its --database-url if given, read before commander runs
 * (cli/early-budget.ts): the first word that is not an option, stepping over the
 * values of the global options that take one. Undefined when an unknown option comes first,
 * since its value could be mistaken for the command.
 */
export function commandIn(
  argv: readonly string[],
  globalsWithValue: readonly string[],
): { command: string; databaseUrl: string | undefined } | undefined {
  let command: string | undefined;
  let databaseUrl: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") break;
    if (a === "--database-url") databaseUrl = argv[++i];
    else if (a.startsWith("--database-url=")) databaseUrl = a.slice("--database-url=".length);
    else if (command !== undefined) continue;
    else if (globalsWithValue.includes(a)) i++;
    else if (a.startsWith("-")) {
      if (!a.includes("=") && a !== "--json") return undefined;
    } else command = a;
  }
  return command === undefined ? undefined : { command, databaseUrl };
}

/** The CLI's hook before a command's action: the budgeted long-running processes get the cap. */
export function budgetMemoryFor(command: string, opts: { databaseUrl?: string | undefined }): void {
  if (command === "agent" || ((command === "up" || command === "controller") && !opts.databaseUrl))
    keepYoungGenerationSmall();
}
