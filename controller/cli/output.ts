/** Command output: human text by default, one JSON document with --json. Errors go to stderr. */
import { FleetError } from "../../shared/errors.js";

export interface OutputOptions {
  json: boolean;
}

export function emit(o: OutputOptions, data: unknown, human: () => string): void {
  process.stdout.write(o.json ? JSON.stringify(data) + "\n" : human() + "\n");
}

export function table(rows: Record<string, string | number | boolean>[], columns: string[]): string {
  if (rows.length === 0) return "(none)";
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => String(r[c] ?? ""))))].join("\n");
}

/** Prints a failure in one line (or as JSON) and returns the exit code. */
export function fail(o: OutputOptions, e: unknown): number {
  const err = FleetError.from(e);
  if (o.json) process.stdout.write(JSON.stringify({ error: { code: err.code, message: err.message } }) + "\n");
  else process.stderr.write(`clankie: ${err.code}: ${err.message}\n`);
  return 1;
}
