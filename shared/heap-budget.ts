/**
 * V8's heap kept to the budget of each long-running process, set by the CLI before a command's
 * modules load (set at run time, V8 reads both flags when it next sizes a space).
 *
 * The young generation near its initial size, for the processes that run on a memory budget: the
 * embedded journal's controller (`clankie up`, or a controller with no PostgreSQL URL; issue 17:
 * ≤ 200 MB after 1,000 deliveries) and the node agent (idle ≤ 80 MB). V8 doubles the young
 * generation (to 2 × 16 MB) as soon as allocation is brisk, and loading the modules is brisk, so the
 * cap is set first. Measured side by side (ADR 0015 amendment): the up process 165–171 → 143–146 MB
 * at start and 190–214 → 165–167 MB after 1,000 deliveries; the agent 97–99 → 87–90 MB idle and
 * 115 → 90–92 MB after 300; neither's CPU per delivery moved beyond the noise. From the command
 * line V8 clamps the factor to 2, so it is set at run time.
 *
 * The old generation's growth bounded, for a controller on PostgreSQL (ADR 0042): its memory grows
 * with the fleet it links, and V8 lets the old generation grow up to 4× past what the last full
 * collection kept before it collects again. After a fleet links (TLS handshakes, registrations,
 * first seat reports) most of that is garbage, and at 1,000 idle agents the heap held 176 MB for
 * ~65 MB live. Growing by 20% a time keeps the idle heap near what is live.
 */
import { setFlagsFromString } from "node:v8";

export function keepYoungGenerationSmall(): void {
  setFlagsFromString("--semi-space-growth-factor=1");
}

/** The old generation grows by this share of what the last full collection kept. */
export const OLD_GENERATION_GROWTH_PERCENT = 20;

export function boundOldGenerationGrowth(): void {
  setFlagsFromString(`--heap-growing-percent=${OLD_GENERATION_GROWTH_PERCENT}`);
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

/** The CLI's hook before a command's action: each long-running process gets its heap budget. */
export function budgetMemoryFor(command: string, opts: { databaseUrl?: string | undefined }): void {
  const controller = command === "up" || command === "controller";
  if (command === "agent" || (controller && !opts.databaseUrl)) keepYoungGenerationSmall();
  if (controller && opts.databaseUrl) boundOldGenerationGrowth();
}
