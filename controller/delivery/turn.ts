/**
 * message_seat, step two: the seat's turn, in the fleet-wide admission order (ADR 0039). This is one
 * controller's side of it: which of its holders waits in the seat's line, which has the turn, and when it
 * asks the journal (turn-statements.ts) for a turn handed to one of them. A turn passes within a
 * controller in process, on the settle's answer; across controllers the receiver hears it
 * (turn-hand-offs.ts) or polls for it.
 */
import type { Db } from "../db/open.js";
import type { InstanceEpoch } from "../journal/lease-guard.js";
import type { SeatTurn, TurnAdmission } from "./receipt-types.js";
import { type HandOffs, hearHandOffs } from "./turn-hand-offs.js";
import type { TurnSuspect } from "./turn-takeover.js";
import { passTurn, pollTurn, releaseLease, TURN_CLAIM_MS, type TurnWriter } from "./turn-statements.js";

/** A controller with waiters and no turn on a seat polls this often; less often while it hears hand-offs. */
const POLL_MS = 25;
const POLL_LISTENING_MS = 100;

/**
 * A controller whose own holder has had the turn this long looks this often for a turn the fleet moved to
 * one of its waiters (the holder's lease taken over, or given up at a new epoch: ADR 0036, 0043), well
 * inside the claim window; a hand-off it hears is looked at at once. A turn passed on sooner, as on a busy
 * seat, is handed on by its own settle in process, with no look.
 */
const WATCH_MS = TURN_CLAIM_MS / 3;

/** A lease handed to a holder of this controller that is not waiting here is kept for it this long. */
const UNCLAIMED_MS = 1_000;

/** A release the journal refused is tried again this often, until the lease would have expired (ADR 0032). */
const RELEASE_RETRY_MS = 250;

interface SeatQueue {
  /** This controller's holder that has the seat's lease (or has been handed it), if any. */
  current: string | null;
  /** When `current` got the turn (performance.now()). */
  currentSince: number;
  /** This controller's holders given the turn and not yet done with it: a second grant of one changes nothing. */
  holding: Set<string>;
  /** This controller's deliveries in the seat's line, by holder: given the turn, or the journal's error. */
  waiters: Map<string, (held: boolean | Error) => void>;
  /** Holders handed the lease before they (re)appeared here; see UNCLAIMED_MS. */
  unclaimed: Set<string>;
  polling: boolean;
  /** Ends the poll's pause now: a hand-off to this controller was heard. */
  wake?: (() => void) | undefined;
}

/** One controller's side of the seat turns: which of its holders waits, and which got the lease. */
export class SeatTurns {
  private readonly seats = new Map<string, SeatQueue>();
  private readonly handOffs: HandOffs;

  constructor(
    private readonly db: Db,
    private readonly leaseMs: number,
    private readonly instanceId: string,
    private readonly onError: (what: string, e: Error) => void = () => {},
    /** This instance's (id, epoch): every seat-turn statement is refused unless that lease is live (ADR 0036). */
    private readonly fence: () => InstanceEpoch | undefined = () => undefined,
    /** ADR 0043: told of a peer the poll finds holding or awaiting the turn with its renewal `afterMs` overdue. */
    private readonly suspects?: { afterMs: number; found: (seatId: string, s: TurnSuspect) => void },
  ) {
    this.handOffs = hearHandOffs(
      db,
      instanceId,
      (seat) => (seat ? this.seats.get(seat)?.wake?.() : this.wakeAll()),
      onError,
    );
  }

  /** The writer of this controller's seat-turn statements, fenced by its instance lease as it is now. */
  writer(): TurnWriter {
    return { db: this.db, leaseMs: this.leaseMs, fence: this.fence() };
  }

  /** Every poll looks again now (a hand-off was heard, or a peer's turns were taken over). */
  wakeAll(): void {
    for (const q of this.seats.values()) q.wake?.();
  }

  /** This controller's waiters for a seat (tests). */
  waiting(seatId: string): number {
    return this.seats.get(seatId)?.waiters.size ?? 0;
  }

  /** Resolves once it is `holder`'s turn, or after `waitMs` without it; admitted, or joined by turn-join.ts. */
  async enter(
    seatId: string,
    holder: string,
    admission: TurnAdmission | Promise<TurnAdmission>,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<SeatTurn> {
    const started = performance.now();
    let held = (typeof admission === "string" ? admission : await admission) === "lease";
    const q = this.queue(seatId);
    if (held) {
      q.current = holder;
      q.currentSince = performance.now();
      q.holding.add(holder);
    } else held = await this.wait(seatId, q, holder, started + waitMs, signal);
    let done = !held;
    let parked = false;
    return {
      seatId,
      holder,
      held,
      waitedMs: performance.now() - started,
      get finished() {
        return done || parked;
      },
      park: () => void (parked = true),
      settled: (handedTo) => {
        if (done) return;
        parked = false;
        done = true;
        this.moved(seatId, holder, handedTo);
      },
    };
  }

  /** Gives a turn back without a settle statement (a notice, a stop, a turn its delivery did not settle). */
  async leave(turn: SeatTurn): Promise<void> {
    if (!turn.finished) turn.settled(await this.pass(turn.seatId, turn.holder));
  }

  /** A turn whose settle failed passes on now; its lease is released later (or a late settle handed it on). */
  leaveLater(turn: SeatTurn): void {
    if (turn.finished) return;
    this.releaseLater(turn.seatId, turn.holder, "seat lease release after a failed settle failed");
    turn.settled(null);
  }

  /** A release the journal refused, retried until it commits or the lease expires: else the seat stays taken. */
  releaseLater(seatId: string, holder: string, what = "seat lease release failed"): void {
    const until = performance.now() + this.leaseMs;
    const attempt = () => {
      releaseLease(this.writer(), seatId, holder).catch((e: Error) => {
        if (performance.now() + RELEASE_RETRY_MS >= until) return this.onError(`${what}; it expired instead`, e);
        setTimeout(attempt, RELEASE_RETRY_MS).unref();
      });
    };
    setTimeout(attempt, RELEASE_RETRY_MS).unref();
  }

  private queue(seatId: string): SeatQueue {
    let q = this.seats.get(seatId);
    if (!q)
      this.seats.set(
        seatId,
        (q = {
          current: null,
          currentSince: 0,
          holding: new Set(),
          waiters: new Map(),
          unclaimed: new Set(),
          polling: false,
        }),
      );
    return q;
  }

  /** Waits in the line until the lease comes to `holder` (true) or the wait is over (false). */
  private wait(seatId: string, q: SeatQueue, holder: string, deadline: number, signal?: AbortSignal): Promise<boolean> {
    // Handed the lease while its admission's answer was on its way.
    if (q.unclaimed.delete(holder)) {
      q.holding.add(holder);
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve, reject) => {
      const grant = (held: boolean | Error) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", giveUp);
        if (held instanceof Error) reject(held);
        else resolve(held);
      };
      const giveUp = () => {
        if (q.waiters.get(holder) !== grant) return;
        q.waiters.delete(holder);
        const here = q.current ? `${q.current} has it` : q.polling ? "polling" : "not polling";
        if (!signal?.aborted) this.onError(`${holder} waited all its wait for ${seatId}`, new Error(here));
        grant(false);
        this.passOn(seatId, holder); // Out of the line; a lease handed to it meanwhile goes on to the next.
      };
      q.waiters.set(holder, grant);
      const timer = setTimeout(giveUp, Math.max(0, deadline - performance.now()));
      signal?.addEventListener("abort", giveUp, { once: true });
      if (signal?.aborted) giveUp();
      this.pump(seatId, q);
    });
  }

  /**
   * The lease left `from` (null: found by a poll) for `to` (null: released). A holder of this controller that
   * is not waiting (its admission's answer is on its way, it gave up or was refused) gets UNCLAIMED_MS; one
   * already in its turn (a poll found it before the settle that handed it on answered) keeps it.
   */
  private moved(seatId: string, from: string | null, to: string | null): void {
    const q = this.queue(seatId);
    const had = q.current;
    if (from !== null) {
      q.holding.delete(from);
      if (q.current === from) q.current = null;
    }
    if (to?.startsWith(`${this.instanceId}:`)) {
      if (q.current !== to) q.currentSince = performance.now();
      q.current = to;
      const grant = q.waiters.get(to);
      if (q.holding.has(to)) {
        // Granted already.
      } else if (grant) {
        q.waiters.delete(to);
        q.holding.add(to);
        grant(true);
      } else {
        q.unclaimed.add(to);
        setTimeout(() => q.unclaimed.delete(to) && this.passOn(seatId, to), UNCLAIMED_MS).unref();
      }
    }
    // The turn left this controller: a poll resting as a watcher looks at once, as a new one would.
    if (had !== null && q.current === null && q.polling) q.wake?.();
    this.pump(seatId, q);
  }

  /** Takes `holder` out of the line and passes its lease (if it has it) on: to the head of the line, or null. */
  private async pass(seatId: string, holder: string): Promise<string | null> {
    try {
      return await passTurn(this.writer(), seatId, holder);
    } catch {
      // Given back once the journal answers again; a waiter here polls for it meanwhile.
      this.releaseLater(seatId, holder);
      return null;
    }
  }

  private passOn(seatId: string, holder: string): void {
    void this.pass(seatId, holder).then((to) => this.moved(seatId, holder, to));
  }

  /** With waiters, polls the journal; with nothing left here, forgets the seat. */
  private pump(seatId: string, q: SeatQueue): void {
    if (q.polling) return;
    if (q.waiters.size) void this.poll(seatId, q);
    else if (q.current === null && !q.holding.size && !q.unclaimed.size && this.seats.get(seatId) === q)
      this.seats.delete(seatId);
  }

  /**
   * Asks the journal until no holder here waits, for a turn handed to one of them. While another controller
   * has the turn (or it was freed under a waiter), often. While a holder here has it, only as a watcher,
   * once it has had it WATCH_MS and every WATCH_MS after (at once on a heard hand-off): its settle hands the
   * turn on in process, unless the fleet took its lease over, and then the journal's lease is the truth and
   * the waiter it went to claims it.
   */
  private async poll(seatId: string, q: SeatQueue): Promise<void> {
    q.polling = true;
    let woken = false;
    const heard = () => void (woken = true);
    // Resolves true when woken (a hand-off heard, or the turn left this controller), false at the timer.
    const rest = (ms: number) =>
      new Promise<boolean>((r) => {
        const timer = setTimeout(() => r(false), ms);
        q.wake = () => {
          clearTimeout(timer);
          r(true);
        };
      }).finally(() => void (q.wake = heard));
    q.wake = heard;
    let looked = Number.NEGATIVE_INFINITY;
    while (q.waiters.size) {
      const watching = q.current !== null;
      if (watching && !woken) {
        const wait = Math.max(q.currentSince, looked) + WATCH_MS - performance.now();
        if (wait > 0) {
          woken = await rest(wait);
          continue;
        }
      }
      woken = false;
      looked = performance.now();
      let got: string | null = null;
      try {
        const r = await pollTurn(this.writer(), seatId, this.instanceId, q.current, this.suspects?.afterMs);
        if (r.suspect) this.suspects?.found(seatId, r.suspect);
        got = r.holder;
      } catch (e) {
        // A watcher's failure is its holder's settle's to report; the waiters keep waiting for that hand-off.
        if (watching) continue;
        // The journal is away: the waiters here end now, not sent, rather than after their 25 s.
        this.onError("seat turn poll failed", e as Error);
        for (const [holder, grant] of [...q.waiters]) {
          q.waiters.delete(holder);
          grant(e as Error);
          this.passOn(seatId, holder);
        }
      }
      if (got) this.moved(seatId, null, got);
      else if (q.current === null && !woken && q.waiters.size)
        woken = await rest(this.handOffs.hearing ? POLL_LISTENING_MS : POLL_MS);
    }
    q.wake = undefined;
    q.polling = false;
    this.pump(seatId, q);
  }
}

/** Runs `fn` in the turn `entered` at admission (or joined: turn-join.ts); gives it back unless `fn` settled it. */
export async function withSeatTurn<T>(turns: SeatTurns, entered: Promise<SeatTurn>, fn: (t: SeatTurn) => Promise<T>) {
  const turn = await entered;
  try {
    return await fn(turn);
  } finally {
    await turns.leave(turn);
  }
}
