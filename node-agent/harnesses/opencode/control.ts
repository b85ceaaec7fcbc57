/** Where an OpenCode seat's server and session are, as its seat record's `control` holds them. */
import { SeatKind } from "../../../shared/verdicts.js";
import { readFileSync } from "node:fs";
import type { SeatRecord } from "../adapter.js";
import type { OpenCodeEndpoint } from "./http.js";

export interface OpenCodeControl {
  baseUrl: string;
  sessionId: string;
  /** A file holding the server's basic-auth password; read at each call, never stored in the seat book. */
  passwordFile?: string | undefined;
}

declare module "../adapter.js" {
  interface SeatControls {
    opencode: OpenCodeControl;
  }
}

export function openCodeControl(seat: SeatRecord): OpenCodeControl {
  const c = seat.kind === SeatKind.OpenCode ? seat.control : undefined;
  if (!c || typeof c.baseUrl !== "string" || typeof c.sessionId !== "string")
    throw new Error(`seat ${seat.name} has no OpenCode endpoint`);
  return { baseUrl: c.baseUrl, sessionId: c.sessionId, passwordFile: c.passwordFile };
}

export function openCodeEndpoint(control: OpenCodeControl): OpenCodeEndpoint {
  const password = control.passwordFile ? readFileSync(control.passwordFile, "utf8").trim() : undefined;
  return { baseUrl: control.baseUrl, password };
}
