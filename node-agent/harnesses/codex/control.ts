/** The facts a Codex seat record carries (SeatRecord.control), typed for the seat union. */
import { SeatKind } from "../../../shared/verdicts.js";
import type { SeatRecord } from "../adapter.js";
import type { CodexLaunch } from "./process.js";
import type { WindowsControlPlan } from "./windows.js";

/** Re-proved before every write. */
export interface CodexControl {
  codexHome: string;
  cwd: string;
  launch: CodexLaunch | "direct";
  endpoint?: string | undefined;
  threadId?: string | undefined;
  tuiPid?: number | undefined;
  tuiStartTime?: number | undefined;
  /** TCP endpoints only: the app-server lifetime the kernel showed at the other end of the agent's connection. */
  backendPid?: number | undefined;
  backendStartTime?: number | undefined;
  /** Windows only (rule 38): how this launch may be controlled, fixed at discovery. */
  windows?: WindowsControlPlan | undefined;
  /** The hire that launched this exact TUI in this pane (rules 36, 47): set only for owned seats. */
  ownedByHire?: string | undefined;
}

declare module "../adapter.js" {
  interface SeatControls {
    codex: CodexControl;
  }
}

export function codexControlOf(seat: SeatRecord): CodexControl | undefined {
  if (seat.kind !== SeatKind.Codex) return undefined;
  // The seat book is read back from disk: its fields are checked, not trusted.
  const c = seat.control;
  if (!c || typeof c.codexHome !== "string" || typeof c.cwd !== "string" || typeof c.launch !== "string")
    return undefined;
  return c;
}
