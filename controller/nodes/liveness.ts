/**
 * Rule 55: a dead agent is shown offline, and its in-flight deliveries become uncertain,
 * within 10 s. Offline is judged from heartbeats (registry.isOnline); this watcher ends the
 * Deliver calls still waiting on a machine that went offline, instead of letting each wait
 * for its full deliver timeout. Ending the call is not a verdict: the dispatch records the
 * lost answer as uncertain, never resends it.
 *
 * It runs only while calls are in flight, and reads only the machines of calls that have waited
 * at least one check interval: a call that answers within it costs the journal nothing (the
 * delivery path stays at two statements, ADR 0013), and offline takes several missed heartbeats
 * anyway, so no dead machine is noticed later for it.
 */
import type { Registry } from "./registry.js";

/** How often in-flight calls' machines are checked. */
export const LIVENESS_CHECK_MS = 1_000;

export class MachineOfflineError extends Error {
  override readonly name = "MachineOfflineError";
  constructor(readonly machine: string) {
    super(`machine ${machine} stopped heartbeating and is offline`);
  }
}

export class Liveness {
  /** Per machine, each waiting call's abort and when it started waiting (monotonic ms). */
  private readonly waiting = new Map<string, Map<AbortController, number>>();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(
    private readonly registry: Pick<Registry, "machine" | "isOnline">,
    private readonly checkMs = LIVENESS_CHECK_MS,
  ) {}

  /**
   * A signal that aborts when `machine` goes offline (or `parent` aborts). Call `done` when the
   * call ends, so the watcher stops looking at the machine.
   */
  watch(machine: string, parent?: AbortSignal): { signal: AbortSignal; done: () => void } {
    const ac = new AbortController();
    const set = this.waiting.get(machine) ?? new Map<AbortController, number>();
    set.set(ac, performance.now());
    this.waiting.set(machine, set);
    this.arm();
    const signal = parent ? AbortSignal.any([parent, ac.signal]) : ac.signal;
    return {
      signal,
      done: () => {
        set.delete(ac);
        if (set.size === 0 && this.waiting.get(machine) === set) this.waiting.delete(machine);
      },
    };
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.check(), this.checkMs);
    this.timer.unref();
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      if (this.waiting.size === 0) {
        clearInterval(this.timer);
        this.timer = undefined;
        return;
      }
      const due = performance.now() - this.checkMs;
      for (const [name, set] of [...this.waiting]) {
        if (![...set.values()].some((since) => since <= due)) continue;
        let row;
        try {
          row = await this.registry.machine(name);
        } catch {
          continue; // An unreadable journal says nothing about the agent: keep waiting.
        }
        if (row && this.registry.isOnline(row)) continue;
        for (const ac of set.keys()) ac.abort(new MachineOfflineError(name));
        this.waiting.delete(name);
      }
    } finally {
      this.checking = false;
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.waiting.clear();
  }
}
