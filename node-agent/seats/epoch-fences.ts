/**
 * Fencing at the resource (ADR 0043): the agent does every native write, so it knows which controller
 * epochs have a Deliver in flight to which seat, and it can refuse an epoch for good. A surviving
 * replica asks it to fence a vanished replica's epoch before it takes that replica's seat turns over
 * early; the agent agrees only while the replica has no live link here (a killed process's sockets
 * are closed by its kernel), and then refuses every later Deliver carrying that epoch or an older one.
 * The fences are kept on disk when the agent has a state dir, so a restart does not forget them.
 */
import { existsSync, readFileSync } from "node:fs";
import { writeFileDurably } from "../../shared/durable-file.js";

/** A link a Deliver came on: the agent side of the controller's HTTP/2 session. */
interface LinkSession {
  readonly closed?: boolean;
  readonly destroyed?: boolean;
}

interface InFlight {
  seat: string;
  instance: string;
  epoch: number;
}

/** The instances remembered before closed sessions are forgotten. */
const PRUNE_OVER = 16;

export interface FenceAnswer {
  fenced: boolean;
  inFlightSeats: string[];
}

export class EpochFences {
  /** Per controller instance, the highest epoch fenced: that epoch and every older one are refused. */
  private readonly fencedUpTo = new Map<string, number>();
  private readonly inFlight = new Set<InFlight>();
  /** The sessions each instance's calls came on (weakly: a closed session is only a closed one). */
  private readonly links = new Map<string, Set<LinkSession>>();

  constructor(private readonly file?: string) {
    if (file && existsSync(file)) {
      const saved = JSON.parse(readFileSync(file, "utf8")) as Record<string, number>;
      for (const [instance, epoch] of Object.entries(saved)) this.fencedUpTo.set(instance, epoch);
    }
  }

  /**
   * A Deliver arrived: refused (false) when its epoch is fenced; otherwise counted in flight to `seat`
   * from this instant (before it waits for the seat's lock) until `done`. No instance: not fenced.
   */
  begin(seat: string, instance: string, epoch: number, link: object | undefined): { done: () => void } | false {
    if (!instance) return { done: () => {} };
    if (this.isFenced(instance, epoch)) return false;
    if (link) {
      let set = this.links.get(instance);
      if (!set) {
        // Closed sessions are only kept as long as their instance calls: a restarted controller is a new instance.
        if (this.links.size >= PRUNE_OVER) this.prune();
        this.links.set(instance, (set = new Set()));
      }
      if (!set.has(link as LinkSession)) for (const l of set) if (l.closed || l.destroyed) set.delete(l);
      set.add(link as LinkSession);
    }
    const entry = { seat, instance, epoch };
    this.inFlight.add(entry);
    return { done: () => void this.inFlight.delete(entry) };
  }

  private prune(): void {
    for (const [instance, set] of this.links) {
      for (const l of set) if (l.closed || l.destroyed) set.delete(l);
      if (set.size === 0) this.links.delete(instance);
    }
  }

  isFenced(instance: string, epoch: number): boolean {
    const upTo = this.fencedUpTo.get(instance);
    return upTo !== undefined && epoch <= upTo;
  }

  /**
   * Fences `instance`'s epochs up to `epoch`, unless it still has a live link here (then nothing changes).
   * The answer names the seats a Deliver of a fenced epoch is still in flight to.
   */
  fence(instance: string, epoch: number): FenceAnswer {
    const links = this.links.get(instance);
    if (links) {
      for (const l of links) if (l.closed || l.destroyed) links.delete(l);
      if (links.size > 0) return { fenced: false, inFlightSeats: [] };
      this.links.delete(instance);
    }
    if ((this.fencedUpTo.get(instance) ?? -1) < epoch) {
      this.fencedUpTo.set(instance, epoch);
      if (this.file) writeFileDurably(this.file, JSON.stringify(Object.fromEntries(this.fencedUpTo)));
    }
    const seats = new Set<string>();
    for (const f of this.inFlight) if (f.instance === instance && f.epoch <= epoch) seats.add(f.seat);
    return { fenced: true, inFlightSeats: [...seats].sort() };
  }
}
