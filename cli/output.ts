/** Command output: human text by default, one JSON document with --json. Errors go to stderr (or stdout as JSON). */
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorCode, FleetError } from "../shared/errors.js";
import { visibleInline } from "../shared/terminal-text.js";
import { exitCodeFor } from "./exit-codes.js";

export interface OutputOptions {
  json: boolean;
}

export function emit(o: OutputOptions, data: unknown, human: () => string): void {
  process.stdout.write(o.json ? JSON.stringify(data) + "\n" : human() + "\n");
}

/** camelCase column keys as headers: agentVersion → AGENT_VERSION (one word, so columns still split on spaces). */
const header = (key: string) => key.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase();

/**
 * A plain-text table; every cell is escaped for the terminal (cells hold names and ids others
 * chose). With no rows it prints `empty`: what to do next, not a bare "(none)".
 */
export function table(rows: Record<string, string | number | boolean>[], columns: string[], empty = "(none)"): string {
  if (rows.length === 0) return empty;
  rows = rows.map((r) =>
    Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === "string" ? visibleInline(v) : v])),
  );
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [line(columns.map(header)), ...rows.map((r) => line(columns.map((c) => String(r[c] ?? ""))))].join("\n");
}

/** Types a CLI failure: a transport error talking to the controller is "controller_unreachable", not an agent's. */
export function cliError(e: unknown): FleetError {
  if (e instanceof ConnectError && e.code === Code.Unavailable && !/^[a-z_]+: /.test(e.rawMessage)) {
    return new FleetError(
      ErrorCode.ControllerUnreachable,
      `the controller does not answer (${e.rawMessage}); is 'clankie up' running for this --state-dir, or is --controller right?`,
      { cause: e },
    );
  }
  return FleetError.from(e);
}

/** Prints a failure in one line (or as JSON) and returns the exit code. */
export function fail(o: OutputOptions, e: unknown): number {
  const err = cliError(e);
  if (o.json) process.stdout.write(JSON.stringify({ error: { code: err.code, message: err.message } }) + "\n");
  else process.stderr.write(`clankie: ${err.code}: ${visibleInline(err.message)}\n`);
  return exitCodeFor(err.code);
}
