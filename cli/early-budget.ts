/**
 * Run by the CLI's entry (main.ts) before the CLI's modules load: the young generation's cap
 * for the budgeted processes (shared/heap-budget.ts), decided from the raw argv. The
 * preAction hook (cli.ts) decides again from commander's parse, but by then loading the CLI's
 * modules (ESM parses a whole static graph before running any of it) has already grown the young
 * generation to 8 MB. A command line this scan cannot read (an unknown option before the
 * command) leaves the decision to the hook.
 */
import { budgetMemoryFor, commandIn } from "../shared/heap-budget.js";

/** The global options that take a value, so the scan can step over it to the command's name. */
export const GLOBAL_OPTIONS_WITH_VALUE = ["--state-dir", "--log-level", "--controller"] as const;

const early = commandIn(process.argv.slice(2), GLOBAL_OPTIONS_WITH_VALUE);
if (early) budgetMemoryFor(early.command, { databaseUrl: early.databaseUrl ?? process.env.DATABASE_URL });
