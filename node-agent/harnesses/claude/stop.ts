/**
 * Claude's Stop: the one guarded Esc of ADR 0207 (VUH-2680), the only key Clankie ever sends.
 * Pressed once, through the pane host's key input, only while the host shows that exact
 * pane/terminal/session working and the input line is provably empty, with authority
 * rechecked just before. Never repeated; `stopped` only if the pane is seen idle afterwards.
 *
 * PaneHost (node-agent/panes/pane-host.ts) has no key input: this file declares the optional
 * part a host must add to support it, kept apart so no other code path can reach a key.
 */
import type { PaneAgentStatus } from "../../panes/pane-host.js";
import type { SeatRecord, StopResult } from "../adapter.js";

export interface PaneKeyInput {
  /** A fresh read of the pane: identity and the host's agent status; undefined when the pane is gone. */
  paneState(
    paneId: string,
  ): Promise<{ paneId: string; terminalId: string; sessionId: string; agentStatus: PaneAgentStatus } | undefined>;
  /** The harness's input line as shown now; undefined when it cannot be read with certainty. */
  inputLine(paneId: string): Promise<string | undefined>;
  /** Press Escape once in exactly this pane. */
  pressEscape(paneId: string): Promise<void>;
}

export interface GuardedEscOptions {
  keys: PaneKeyInput;
  /** Owner authority and the seat binding, checked again just before the key. */
  recheckAuthority: (seat: SeatRecord) => Promise<boolean>;
  idleWaitMs?: number;
  pollMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createGuardedEscStop(o: GuardedEscOptions): (seat: SeatRecord) => Promise<StopResult> {
  const idleWaitMs = o.idleWaitMs ?? 10_000;
  const pollMs = o.pollMs ?? 200;
  return async (seat) => {
    const pane = seat.pane;
    if (!pane) return { result: "unsupported", detail: "the seat is not in a pane; there is no key input to use" };
    const exact = async () => {
      const s = await o.keys.paneState(pane.paneId);
      if (!s) return { ok: false as const, detail: "the pane is gone" };
      if (s.terminalId !== pane.terminalId || s.sessionId !== pane.sessionId)
        return { ok: false as const, detail: "the pane now shows a different terminal or session" };
      return { ok: true as const, status: s.agentStatus };
    };
    const first = await exact();
    if (!first.ok) return { result: "unavailable", detail: `${first.detail}; no key was sent` };
    if (first.status === "idle" || first.status === "done")
      return { result: "already_finished", detail: "the pane shows Claude idle; no key was sent" };
    if (first.status !== "working")
      return { result: "unavailable", detail: `the pane shows Claude ${first.status}, not working; no key was sent` };
    const line = await o.keys.inputLine(pane.paneId);
    if (line === undefined)
      return { result: "unavailable", detail: "the input line could not be read with certainty; no key was sent" };
    if (line.trim() !== "")
      return {
        result: "unavailable",
        detail: "the input line holds the owner's text; Esc could clear it, so no key was sent",
      };
    if (!(await o.recheckAuthority(seat)))
      return { result: "unavailable", detail: "authority did not hold at the recheck; no key was sent" };
    const last = await exact();
    if (!last.ok || last.status !== "working")
      return {
        result: "unavailable",
        detail: `${last.ok ? `the pane shows ${last.status}` : last.detail} at the final check; no key was sent`,
      };
    try {
      await o.keys.pressEscape(pane.paneId);
    } catch (e) {
      return {
        result: "uncertain",
        detail: `the Esc may or may not have reached the pane (${(e as Error).message}); it is never pressed again`,
      };
    }
    const deadline = Date.now() + idleWaitMs;
    do {
      await sleep(pollMs);
      const after = await exact().catch(() => undefined);
      if (after?.ok && (after.status === "idle" || after.status === "done"))
        return { result: "stopped", detail: "one Esc; the pane then showed Claude idle" };
    } while (Date.now() < deadline);
    return {
      result: "uncertain",
      detail: "one Esc was pressed but Claude was not seen idle afterwards; it is never pressed again",
    };
  };
}
