/**
 * Runs one inspection command (ps, lsof, PowerShell) for the macOS and Windows proof
 * providers: argv only, never a shell string, a fixed C locale and UTC so the output
 * parses the same everywhere, and a timeout. Injectable, so providers are tested on
 * recorded output.
 */
import { execFile } from "node:child_process";

export interface CommandResult {
  /** Exit code; -1 when the command could not be started at all. */
  code: number;
  stdout: string;
  stderr: string;
  /** Set when the command does not exist here (ENOENT). */
  isMissing: boolean;
}

export interface CommandOptions {
  /** Replaces the inherited environment (the C locale and UTC are still set). */
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** Text in UTF-8 rather than the C locale (ps prints a non-ASCII byte as "?" in C); the number and date formats stay C's. */
  utf8?: boolean;
}

/** The seam: the real runner below on the real OS, a recorded one in tests, the same proof code above it. */
export type CommandRunner = (file: string, args: readonly string[], options?: CommandOptions) => Promise<CommandResult>;

const TIMEOUT_MS = 5_000;
const MAX_BUFFER = 16 * 1024 * 1024;

/** LC_CTYPE only, so dates and numbers keep C's form: macOS names it "UTF-8", glibc "C.UTF-8". */
function utf8Locale(): Record<string, string> {
  return { LC_ALL: "", LC_CTYPE: process.platform === "darwin" ? "UTF-8" : "C.UTF-8" };
}

export const runCommand: CommandRunner = (file, args, options = {}) =>
  new Promise((resolve) => {
    execFile(
      file,
      args,
      {
        timeout: options.timeoutMs ?? TIMEOUT_MS,
        maxBuffer: MAX_BUFFER,
        windowsHide: true,
        env: {
          ...(options.env ?? process.env),
          LC_ALL: "C",
          LANG: "C",
          TZ: "UTC",
          ...(options.utf8 ? utf8Locale() : {}),
        },
      },
      (error, stdout, stderr) => {
        const e = error as (NodeJS.ErrnoException & { code?: string | number }) | null;
        const isMissing = e?.code === "ENOENT";
        const code = e === null ? 0 : typeof e.code === "number" ? e.code : -1;
        resolve({ code, stdout: String(stdout), stderr: String(stderr), isMissing });
      },
    );
  });
