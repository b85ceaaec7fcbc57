/** The CLI's exit codes, one per kind of failure a script may want to tell apart (documented in `clankie --help`). */
import { ErrorCode } from "../shared/errors.js";

export const ExitCode = {
  /** The command did what it said. */
  Ok: 0,
  /** The command ran and failed: the controller refused, a check failed, a delivery is unresolved. */
  Failed: 1,
  /** The command line was wrong: unknown command or option, a bad value, a missing argument. */
  Usage: 2,
  /** No controller answers: none is running for this state dir, or its address refuses. */
  Unreachable: 3,
  /** A token was missing or refused. */
  Unauthenticated: 4,
} as const;

export const EXIT_CODES_HELP = `Exit codes:
  0  done
  1  the command failed (a refusal, a failed check, a port in use, a database that cannot be opened)
  2  usage: unknown command or option, bad value, missing argument
  3  no controller answers (none running for this --state-dir, or its address refuses)
  4  a token was missing or refused`;

/** `clankie doctor --help`: the codes doctor.ts returns (issue 37 item 5: the help said 1 where it exits 3). */
export const DOCTOR_EXIT_HELP = `Exit codes of doctor:
  0  every check passed (a WARN, such as a revoked machine waiting for clankie fleet remove, still passes)
  1  a check failed (the database, an agent offline, no agent registered)
  3  no controller answers (no controller.json, a stale one, or its port refuses)
  4  the controller answers but refused the owner token`;

export function exitCodeFor(code: string): number {
  if (code === ErrorCode.InvalidArgument) return ExitCode.Usage;
  if (code === ErrorCode.ControllerUnreachable) return ExitCode.Unreachable;
  if (code === ErrorCode.Unauthenticated) return ExitCode.Unauthenticated;
  return ExitCode.Failed;
}
