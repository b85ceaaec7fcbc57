/**
 * One operation per seat at a time inside the agent: a delivery's gate and write, a stop, a
 * controller's inspect and the status watch's inspect never interleave on one seat, so what
 * the gate proved is what the write uses (adapters keep the last proven control per seat).
 * Different seats run in parallel.
 */
export class SeatLocks {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(seatName: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(seatName) ?? Promise.resolve();
    const mine = before.catch(() => {}).then(fn);
    const tail = mine.catch(() => {});
    this.tails.set(seatName, tail);
    void tail.then(() => {
      if (this.tails.get(seatName) === tail) this.tails.delete(seatName);
    });
    return mine;
  }
}
