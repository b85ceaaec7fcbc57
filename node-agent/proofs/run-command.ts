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

export type CommandRunner = (file: string, args: readonly string[]) => Promise<CommandResult>;

const TIMEOUT_MS = 5_000;
const MAX_BUFFER = 16 * 1024 * 1024;

export const runCommand: CommandRunner = (file, args) =>
  new Promise((resolve) => {
    execFile(
      file,
      args,
      { timeout: TIMEOUT_MS, maxBuffer: MAX_BUFFER, windowsHide: true, env: { ...process.env, LC_ALL: "C", LANG: "C", TZ: "UTC" } },
      (error, stdout, stderr) => {
        const e = error as (NodeJS.ErrnoException & { code?: string | number }) | null;
        const isMissing = e?.code === "ENOENT";
        const code = e === null ? 0 : typeof e.code === "number" ? e.code : -1;
        resolve({ code, stdout: String(stdout), stderr: String(stderr), isMissing });
      },
    );
  });
