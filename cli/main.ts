#!/usr/bin/env node
/**
 * The `clankie` command's entry. It only caps V8's young generation for the budgeted processes
 * (early-budget.ts) and then loads the CLI itself (cli.ts): the cap must come before the CLI's
 * module graph is parsed, and a static import of cli.ts would parse it first. Measured (issue 17,
 * ADR 0015 amendment): the idle agent 80.4–85.0 MB with the cap set after loading, 75.2–75.7 MB
 * with it set before.
 */
import "./early-budget.js";

await import("./cli.js");
