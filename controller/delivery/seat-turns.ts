/**
 * Deliveries to one seat take turns (ADR 0207, VUH-2779): a later message waits for the
 * one in flight, bounded at 25 s, then goes on to the ordinary checks. This keeps the
 * order within one controller process; the database lock in the pipeline keeps it
 * across replicas.
 */
export const SEAT_TURN_WAIT_MS = 25_000;

export class SeatTurns {
  private readonly tails = new Map<string, Promise<void>>();

  /** Waits for the seat's current turn (at most `waitMs`) and returns a release function. */
  async take(seatId: string, waitMs = SEAT_TURN_WAIT_MS): Promise<{ release: () => void; waitedMs: number; timedOut: boolean }> {
    const before = this.tails.get(seatId) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = before.then(() => mine);
    this.tails.set(seatId, tail);
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      before.then(() => false),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(true), waitMs);
      }),
    ]);
    clearTimeout(timer);
    return {
      waitedMs: performance.now() - started,
      timedOut,
      release: () => {
        release();
        if (this.tails.get(seatId) === tail) this.tails.delete(seatId);
      },
    };
  }
}
