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

/**
 * The calls waiting on one machine. They share one abort (a machine going offline ends all of
 * them at once), linked to the parent signal once for the group instead of once per call; the
 * group outlives its calls, so one delivery after another reuses it.
 */
interface Group {
  readonly machine: string;
  readonly abort: AbortController;
  readonly parent: AbortSignal | undefined;
  readonly signal: AbortSignal;
  /** Each waiting call and when it started waiting (monotonic ms). */
  readonly calls: Map<Watch, number>;
}

/** One call's watch: `signal` aborts when its machine goes offline (or the parent aborts). */
export class Watch {
  constructor(
    private readonly group: Group,
    readonly signal: AbortSignal,
  ) {}

  /** The call ended: the watcher stops looking at the machine for it. */
  done(): void {
    this.group.calls.delete(this);
  }
}

function newGroup(machine: string, parent: AbortSignal | undefined): Group {
  const abort = new AbortController();
  return {
    machine,
    abort,
    parent,
    signal: parent ? AbortSignal.any([parent, abort.signal]) : abort.signal,
    calls: new Map(),
  };
}

export class Liveness {
  /** Per machine, the group new calls join. */
  private readonly groups = new Map<string, Group>();
  /** Groups of calls whose parent signal differs from their machine's group (none on the delivery path). */
  private readonly others = new Set<Group>();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(
    private readonly registry: Pick<Registry, "machine" | "isOnline">,
    private readonly checkMs = LIVENESS_CHECK_MS,
  ) {}

  /**
   * A watch whose signal aborts when `machine` goes offline (or `parent` aborts). Call `done`
   * when the call ends, so the watcher stops looking at the machine.
   */
  watch(machine: string, parent?: AbortSignal): Watch {
    let group = this.groups.get(machine);
    if (!group || group.abort.signal.aborted || (group.parent !== parent && group.calls.size === 0)) {
      group = newGroup(machine, parent);
      this.groups.set(machine, group);
    } else if (group.parent !== parent) {
      group = newGroup(machine, parent);
      this.others.add(group);
    }
    const w = new Watch(group, group.signal);
    group.calls.set(w, performance.now());
    this.arm();
    return w;
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
      for (const g of this.others) if (g.calls.size === 0) this.others.delete(g);
      const waiting = [...this.groups.values(), ...this.others].filter((g) => g.calls.size > 0);
      if (waiting.length === 0) {
        clearInterval(this.timer);
        this.timer = undefined;
        return;
      }
      const due = performance.now() - this.checkMs;
      const offline = new Map<string, boolean>();
      for (const g of waiting) {
        if (![...g.calls.values()].some((since) => since <= due)) continue;
        let down = offline.get(g.machine);
        if (down === undefined) {
          let row;
          try {
            row = await this.registry.machine(g.machine);
          } catch {
            continue; // An unreadable journal says nothing about the agent: keep waiting.
          }
          down = !(row && this.registry.isOnline(row));
          offline.set(g.machine, down);
        }
        if (!down) continue;
        g.calls.clear();
        if (this.groups.get(g.machine) === g) this.groups.delete(g.machine);
        this.others.delete(g);
        g.abort.abort(new MachineOfflineError(g.machine));
      }
    } finally {
      this.checking = false;
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.groups.clear();
    this.others.clear();
  }
}
