/**
 * What every `clankie` command's action gets (cli.ts registers them): the global options compiled
 * into one context, and a runner that turns any throw into one typed line and its exit code
 * (output.ts `fail`). The runner keeps how the process ends once the parse returns: with that code,
 * unless a command keeps serving on stdio.
 */
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { createLogger, type LogLevel, type Logger } from "../shared/logger.js";
import { defaultStateDir, FAULT_POINTS, type FaultPoint } from "../controller/for-cli.js";
import { fail, type OutputOptions } from "./output.js";
import { ExitCode } from "./exit-codes.js";

interface Globals {
  json?: boolean;
  output?: "json" | "table";
  stateDir?: string;
  logLevel?: LogLevel;
  controller?: string;
}

export interface Ctx {
  out: OutputOptions;
  stateDir: string;
  /** The node agent's own state dir (`<state dir>/agent` unless --agent-state-dir). */
  agentStateDir: (flag: string | undefined) => string;
  logger: Logger;
  level: LogLevel;
  controller: string | undefined;
  env: NodeJS.ProcessEnv;
}

/** How the process ends: the last action's exit code, unless a command keeps serving on stdio after it returns. */
export const ending = { exitCode: ExitCode.Ok as number, keepServing: false };

function context(cmd: Command, env: NodeJS.ProcessEnv, defaultLevel: LogLevel): Ctx {
  const g = cmd.optsWithGlobals<Globals>();
  const stateDir = resolve(g.stateDir ?? defaultStateDir(env));
  const level = g.logLevel ?? defaultLevel;
  return {
    // -o json and --json are one switch (kubectl's -o, the project's older --json).
    out: { json: (g.json ?? false) || g.output === "json" },
    stateDir,
    agentStateDir: (flag) => resolve(flag ?? join(stateDir, "agent")),
    logger: createLogger({ level, fields: { proc: cmd.name() } }),
    level,
    controller: g.controller,
    env,
  };
}

/** Fault injection for the crash-window suites only; never set in production. */
export function faultFrom(env: NodeJS.ProcessEnv): FaultPoint | undefined {
  return FAULT_POINTS.find((p) => p === env.CLANKIE_FAULT);
}

/** Runs an action, turning any throw into one typed line and its exit code. */
export function createRun(env: NodeJS.ProcessEnv) {
  return <A extends unknown[]>(defaultLevel: LogLevel, body: (ctx: Ctx, ...args: A) => Promise<number | void>) =>
    async (...args: [...A, Record<string, unknown>, Command]) => {
      const cmd = args[args.length - 1] as Command;
      const ctx = context(cmd, env, defaultLevel);
      try {
        ending.exitCode = (await body(ctx, ...(args.slice(0, -1) as unknown as A))) ?? ExitCode.Ok;
      } catch (e) {
        ending.exitCode = fail(ctx.out, e);
      }
    };
}

/** A command's action, wrapped by the runner with its default log level. */
export type Run = ReturnType<typeof createRun>;
