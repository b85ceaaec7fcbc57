/**
 * Keeps the controller's view of each seat's status and input capabilities live: every
 * interval the seats are inspected (each under its seat lock) and, when any seat's status,
 * capabilities, occupant or cannot-work reason differ from what was last reported, the whole list is reported
 * again. Without it, list_seats would show a seat "working" after its turn ended, or offering
 * steer after its app-server died, until the seat book next changed.
 */
import type { Seat } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import type { Logger } from "../../shared/logger.js";

export interface SeatStatusWatchOptions {
  /** The wire seats as inspected now. */
  inspect: () => Promise<Seat[]>;
  report: (seats: Seat[]) => Promise<void>;
  intervalMs: number;
  logger: Logger;
}

export interface SeatStatusWatch {
  /** What was last reported (set by every report, the watch's or another path's). */
  reported(seats: Seat[]): void;
  stop(): void;
}

function signature(seats: Seat[]): string {
  return JSON.stringify(
    seats
      .map((s) => [
        s.name,
        s.status,
        s.occupantId,
        s.inputCapabilities?.deliveryModes ?? [],
        s.inputCapabilities?.interrupt ?? false,
        s.inputCapabilities?.nextTurnOnly ?? false,
        s.cannotWork?.reason ?? "",
      ])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  );
}

export function startSeatStatusWatch(o: SeatStatusWatchOptions): SeatStatusWatch {
  let last: string | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const tick = async () => {
    try {
      const now = await o.inspect();
      const sig = signature(now);
      if (!stopped && sig !== last) {
        await o.report(now);
        last = sig;
      }
    } catch (e) {
      o.logger.warn("seat status refresh failed; trying again", { error: (e as Error).message });
    }
    if (!stopped) {
      timer = setTimeout(() => void tick(), o.intervalMs);
      timer.unref();
    }
  };
  timer = setTimeout(() => void tick(), o.intervalMs);
  timer.unref();
  return {
    reported(seats) {
      last = signature(seats);
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
