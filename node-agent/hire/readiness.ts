/**
 * Readiness of a hire's new pane (≤30 s): the pane is still running, its screen asks the
 * owner nothing they must decide, and discovery has found the harness there with every
 * proof of its adapter's inspect proven, i.e. the delivery gate would pass now, and the
 * harness's own answer does not say it cannot take a turn (no model, no key: issue 35). The
 * screen is only read; nothing is typed.
 */
import { SeatKind } from "../../shared/verdicts.js";
import type { AdapterRegistry } from "../harnesses/registry.js";
import type { CannotWork, SeatRecord } from "../harnesses/adapter.js";
import type { SeatBook } from "../seats/seat-book.js";
import type { SeatLocks } from "../seats/seat-locks.js";
import type { HireHarness } from "./harnesses.js";
import type { HarnessLauncher } from "./launcher.js";
import type { PaneOpener } from "./pane-opener.js";

export const READINESS_MS = 30_000;

export interface ReadinessDeps {
  seats: SeatBook;
  adapters: AdapterRegistry;
  locks: SeatLocks;
  scanNow: () => Promise<unknown>;
  options: { readinessMs?: number | undefined };
}

export type Readiness =
  | { kind: "ready"; seat: SeatRecord }
  | { kind: "failed"; detail: string }
  | { kind: "blocked"; block: NonNullable<ReturnType<HarnessLauncher["screenBlock"]>>; detail: string }
  | { kind: "timeout"; detail: string }
  /** The harness itself answered that the worker cannot take a turn (issue 35): definite, so the hire ends at once. */
  | { kind: "cannot_work"; cannotWork: CannotWork; detail: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitReady(
  d: ReadinessDeps,
  opener: PaneOpener,
  paneId: string,
  harness: HireHarness,
  launcher: HarnessLauncher,
): Promise<Readiness> {
  const deadline = Date.now() + (d.options.readinessMs ?? READINESS_MS);
  let lastScreen = "";
  let consent: ReturnType<HarnessLauncher["screenBlock"]>;
  while (Date.now() < deadline) {
    const live = await opener.liveness(paneId);
    lastScreen = live.screen || lastScreen;
    if (live.state !== "running") {
      return {
        kind: "failed",
        detail: `${harness} exited before it was ready${lastScreen.trim() ? `; its last screen: ${lastLines(lastScreen)}` : ""}`,
      };
    }
    const block = launcher.screenBlock(live.screen, paneId);
    if (block?.kind === "trust_required")
      return {
        kind: "blocked",
        block,
        detail: `${harness} in pane ${paneId} waits for the owner to decide folder trust; Clankie never answers it`,
      };
    if (block?.definite)
      return {
        kind: "blocked",
        block,
        detail: `${harness} in pane ${paneId} can never take a native message (${block.kind}); its screen: ${lastLines(live.screen)}`,
      };
    consent = block;
    const fatal = launcher.fatalScreen?.(live.screen);
    if (fatal)
      return { kind: "cannot_work", cannotWork: fatal, detail: `${harness} in pane ${paneId} shows: ${fatal.detail}` };
    await d.scanNow();
    const seat = d.seats.discoveredSeats().find((s) => s.pane?.paneId === paneId && s.kind === harness);
    if (seat) {
      const adapter = d.adapters.get(seat.kind);
      const inspected = adapter
        ? await d.locks.run(seat.name, () => adapter.inspect(seat)).catch(() => undefined)
        : undefined;
      // Ready means the delivery gate would pass now: every proof proven (Claude's session report may lag its channel).
      const usable =
        inspected && inspected.snapshot.status !== "offline" && inspected.proofs.every((p) => p.outcome === "proven");
      const cannot = usable ? inspected.snapshot.cannotWork : undefined;
      if (cannot)
        return {
          kind: "cannot_work",
          cannotWork: cannot,
          detail: `${harness} in pane ${paneId} cannot take a turn: ${cannot.detail}`,
        };
      if (usable && (seat.kind !== SeatKind.Codex || inspected.snapshot.inputCapabilities.deliveryModes.length > 0)) {
        // The screen once more, read after the seat proved itself: a refusal shown meanwhile still wins.
        const after = await opener.liveness(paneId);
        const late = launcher.screenBlock(after.screen, paneId);
        if (late?.definite)
          return {
            kind: "blocked",
            block: late,
            detail: `${harness} in pane ${paneId} can never take a native message (${late.kind}); its screen: ${lastLines(after.screen)}`,
          };
        return { kind: "ready", seat };
      }
    }
    await sleep(250);
  }
  if (consent)
    return {
      kind: "blocked",
      block: consent,
      detail: `${harness} in pane ${paneId} still waits for the owner's confirmation after ${(d.options.readinessMs ?? READINESS_MS) / 1000} s`,
    };
  return {
    kind: "timeout",
    detail: `${harness} in pane ${paneId} was not ready within ${(d.options.readinessMs ?? READINESS_MS) / 1000} s${lastScreen.trim() ? `; its screen: ${lastLines(lastScreen)}` : ""}`,
  };
}

function lastLines(screen: string): string {
  return screen
    .split("\n")
    .map((l) => l.trimEnd())
    .filter(Boolean)
    .slice(-6)
    .join(" | ")
    .slice(0, 600);
}
