/**
 * A hire whose worker cannot take a turn (issue 35, rule 52): the harness's own answer (Pi's
 * model and key, Codex's config and account) or its screen (a fatal error it shows, also after
 * the brief's turn began) says so. Such a hire fails `not_ready` with that evidence, closes
 * only the pane it opened, and leaves no seat: discovery runs again once the pane is gone, so
 * the seat book, and the controller's list, drop it.
 */
import type { CannotWork, TurnFollower } from "../harnesses/adapter.js";
import type { AdapterRegistry } from "../harnesses/registry.js";
import type { SeatBook } from "../seats/seat-book.js";
import type { SeatLocks } from "../seats/seat-locks.js";
import type { HarnessLauncher } from "./launcher.js";
import type { PaneOpener } from "./pane-opener.js";

/** How long a hire watches the brief's first moments for the harness refusing the turn. */
export const BRIEF_WATCH_MS = 5_000;
/**
 * The same where the harness follows the turn (`followTurn`): it ends as soon as the model answers, so a
 * working worker is not held; a refusal Codex repeats about every 5 s is heard at its second telling.
 */
export const FOLLOWED_WATCH_MS = 15_000;

export interface NotReadyDeps {
  seats: SeatBook;
  adapters: AdapterRegistry;
  locks: SeatLocks;
  scanNow: () => Promise<unknown>;
}

/** Closes the pane this hire opened and forgets its seat: discovery no longer finds it. */
export async function closeHirePane(
  d: Pick<NotReadyDeps, "scanNow">,
  opener: PaneOpener,
  paneId: string,
  stopSidecars: () => Promise<void>,
): Promise<void> {
  await opener.close(paneId).catch(() => undefined);
  await stopSidecars();
  await d.scanNow().catch(() => undefined);
}

/** The owner's way out, by reason. */
export function cannotWorkFix(harness: string, c: CannotWork): string {
  switch (c.reason) {
    case "no_model":
      return `configure a model for ${harness} on this machine (or pass model to hire_agent), then hire again`;
    case "no_api_key":
    case "no_auth":
      return `give ${harness} on this machine a key or login for its model (the agent's environment or ${harness}'s own config), then hire again`;
    case "model_unreachable":
      return `${harness}'s model server did not answer; check its provider settings and network on this machine, then hire again`;
    default:
      return `fix what ${harness} reported on this machine, then hire again`;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * After the brief went in: until the brief's turn is over (the seat idle again) or, where the harness
 * follows it, its model answered, and for at most `watchMs`, the harness's own turn events, its answer
 * to inspect and its screen are read for a refusal of the turn. Never types.
 */
export async function watchBriefTurn(
  d: NotReadyDeps,
  opener: PaneOpener,
  launcher: HarnessLauncher,
  seatName: string,
  paneId: string,
  follower: TurnFollower | undefined,
  watchMs = follower ? FOLLOWED_WATCH_MS : BRIEF_WATCH_MS,
): Promise<CannotWork | undefined> {
  const deadline = Date.now() + watchMs;
  while (Date.now() < deadline) {
    await sleep(250);
    const said = follower?.refused();
    if (said) return said;
    if (follower?.answered()) return undefined;
    const live = await opener.liveness(paneId).catch(() => undefined);
    const shown = live ? launcher.fatalScreen?.(live.screen) : undefined;
    if (shown) return shown;
    const seat = d.seats.discoveredSeats().find((s) => s.name === seatName);
    const adapter = seat ? d.adapters.get(seat.kind) : undefined;
    if (!seat || !adapter) return undefined;
    const inspected = await d.locks.run(seat.name, () => adapter.inspect(seat)).catch(() => undefined);
    if (inspected?.snapshot.cannotWork) return inspected.snapshot.cannotWork;
    if (inspected?.snapshot.status === "idle") return undefined;
  }
  return undefined;
}
