/**
 * Polls until a probe holds (not undefined or false), every 100 ms, at most `tries` times, and
 * returns what it found; otherwise fails naming what never happened. Real harnesses answer on
 * their own time: suites wait for a fact, never for a fixed delay.
 */
export type Probe<T> = () => Promise<T | undefined | false> | T | undefined | false;

export async function until<T>(probe: Probe<T>, what: string, tries = 600): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened: ${what}`);
}
