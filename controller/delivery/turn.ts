/**
 * message_seat, step two: the seat's turn. Deliveries to one seat take turns (ADR 0207, VUH-2779) in the
 * FLEET-WIDE admission order (ADR 0039): the line is in the journal (seat_waiters, one row per waiting
 * delivery of any replica), the turn is the seat's lease (seat_turns). The admission statement takes a free
 * seat's lease or joins the line; the settle statement hands the lease to the head of the line, whichever
 * replica it is on. This file is the in-process side: which of this controller's deliveries waits, and
 * when one of them got the lease. Its SQL is in turn-statements.ts.
 */
import type { Db } from "../db/open.js";
import type { InstanceEpoch } from "../journal/lease-guard.js";
import {
  joinTurn,
  listenForTurns,
  passTurn,
  pollTurn,
  releaseLeaseWhenBack,
  type TurnSuspect,
} from "./turn-statements.js";

export {
  TURN_CLAIM_MS,
  handLease,
  releaseLease,
  takeSeatLease,
  tryTakeLease,
  type SeatLease,
} from "./turn-statements.js";

/** How long a message waits for the seat's turn before it takes the ordinary checks anyway. */
export const SEAT_TURN_WAIT_MS = 25_000;

/**
 * A controller with waiters and no turn on the seat asks the journal this often whether one got it;
 * less often while it hears hand-offs (LISTEN), when the poll only catches a freed or unclaimed lease.
 */
const POLL_MS = 25;
const POLL_LISTENING_MS = 100;

/**
 * A lease handed to one of this controller's holders that is not waiting here (its admission's answer
 * is still on its way, or it gave up, or its admission was refused): kept this long for it, then passed on.
 */
const UNCLAIMED_MS = 1_000;

/**
 * How a delivery comes to the turn: the admission statement took the free seat's lease ("lease") or
 * put it in the seat's line ("queued"). Notices and stops come without an admission and join here.
 */
export type TurnAdmission = "lease" | "queued";

/** The seat's turn as one delivery (or notice, or stop) holds it. */
export interface SeatTurn {
  readonly seatId: string;
  readonly holder: string;
  /** This holder has the seat's database lease. False after a 25 s wait: it goes on without the turn. */
  readonly held: boolean;
  readonly waitedMs: number;
  /** The settle statement gave the lease up: to `handedTo` (the head of the line), or released (null). */
  settled(handedTo: string | null): void;
  /** The lease was given up (or never held): nothing left to give back. */
  readonly finished: boolean;
  /**
   * The turn's settle could not be recorded and is retried with the lease (settle.ts): the lease moves
   * only with that settle, so nothing gives it back meanwhile; `settled` is called when it lands.
   */
  park(): void;
}

interface SeatQueue {
  /** This controller's holder that has the seat's lease (or has been handed it), if any. */
  current: string | null;
  /** This controller's deliveries in the seat's line, by holder: given the turn, or the journal's error. */
  waiters: Map<string, (held: boolean | Error) => void>;
  /** Holders handed the lease before they (re)appeared here; see UNCLAIMED_MS. */
  unclaimed: Set<string>;
  polling: boolean;
  /** Ends the poll's pause now: a hand-off to this controller was heard. */
  wake?: (() => void) | undefined;
}

export class SeatTurns {
  private readonly seats = new Map<string, SeatQueue>();
  private readonly prefix: string;
  private listening: Promise<(() => Promise<void>) | undefined>;
  private hearing = false;

  constructor(
    private readonly db: Db,
    private readonly leaseMs: number,
    private readonly instanceId: string,
    private readonly onError: (what: string, e: Error) => void = () => {},
    /** This instance's (id, epoch): every seat-turn statement is refused unless that lease is live (ADR 0036). */
    private readonly fence: () => InstanceEpoch | undefined = () => undefined,
    /**
     * ADR 0043: the poll names another instance that holds this seat's turn (or waits for it) while
     * its lease renewal is `afterMs` overdue, so turn-takeover.ts can ask the seat's agent to fence it.
     */
    private readonly suspects?: { afterMs: number; found: (seatId: string, s: TurnSuspect) => void },
  ) {
    this.prefix = `${instanceId}:`;
    // A hand-off from another replica wakes this one's poll (ADR 0039); without it, the poll alone.
    this.listening = listenForTurns(db, instanceId, () => {
      for (const q of this.seats.values()) q.wake?.();
    }).then(
      (stop) => {
        this.hearing = stop !== undefined;
        return stop;
      },
      (e: Error) => {
        onError("seat turn hand-offs cannot be heard; polling for them", e);
        return undefined;
      },
    );
  }

  /** Every poll looks again now (a peer's turns were just taken over). */
  wakeAll(): void {
    for (const q of this.seats.values()) q.wake?.();
  }

  /** Stops hearing hand-offs (the database's close ends it too). */
  async close(): Promise<void> {
    const stop = await this.listening;
    this.listening = Promise.resolve(undefined);
    this.hearing = false;
    await stop?.().catch(() => {});
  }

  /** Local waiters for a seat (tests and the dashboard). */
  waiting(seatId: string): number {
    return this.seats.get(seatId)?.waiters.size ?? 0;
  }

  /**
   * Enters the seat's turn. Resolves once it is this holder's turn, or after `waitMs` without it.
   * `admission`: what the admission statement did; absent, the holder joins the line here (one statement).
   */
  async enter(
    seatId: string,
    holder: string,
    admission?: TurnAdmission,
    waitMs = SEAT_TURN_WAIT_MS,
    signal?: AbortSignal,
  ): Promise<SeatTurn> {
    const started = performance.now();
    let held = admission === "lease";
    if (!admission) held = await joinTurn(this.db, seatId, holder, this.leaseMs, waitMs, this.fence());
    const q = this.queue(seatId);
    if (held) q.current = holder;
    else held = await this.wait(seatId, q, holder, started + waitMs, signal);
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

  /** Gives a turn back without a settle statement (a notice, a stop): one statement. */
  async leave(turn: SeatTurn): Promise<void> {
    if (turn.finished) return;
    try {
      const r = await passTurn(this.db, turn.seatId, turn.holder, this.leaseMs, this.fence());
      turn.settled(r.handedTo);
    } catch {
      // Given back once the journal answers again; a waiter here polls for it meanwhile.
      this.releaseLater(turn.seatId, turn.holder);
      turn.settled(null);
    }
  }

  /**
   * Gives a turn back after its settle statement failed, without waiting for the journal: the
   * turn passes on now and the lease is released once the journal answers, or expires. A
   * settle that commits late may have handed it on already; the waiters here poll for it.
   */
  leaveLater(turn: SeatTurn): void {
    if (turn.finished) return;
    this.releaseLater(turn.seatId, turn.holder, "seat lease release after a failed settle failed");
    turn.settled(null);
  }

  private queue(seatId: string): SeatQueue {
    let q = this.seats.get(seatId);
    if (!q) this.seats.set(seatId, (q = { current: null, waiters: new Map(), unclaimed: new Set(), polling: false }));
    return q;
  }

  /** Waits in the line until the lease comes to `holder` (true) or the wait is over (false). */
  private wait(seatId: string, q: SeatQueue, holder: string, deadline: number, signal?: AbortSignal): Promise<boolean> {
    // Handed the lease while its admission's answer was on its way.
    if (q.unclaimed.delete(holder)) return Promise.resolve(true);
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
        grant(false);
        // Out of the line; a lease handed to it meanwhile goes on to the next.
        this.passOn(seatId, holder);
      };
      q.waiters.set(holder, grant);
      const timer = setTimeout(giveUp, Math.max(0, deadline - performance.now()));
      signal?.addEventListener("abort", giveUp, { once: true });
      if (signal?.aborted) giveUp();
      this.pump(seatId, q);
    });
  }

  /**
   * The lease left `from` (null: found by a poll) for `to` (null: released). A holder of this
   * controller that waits here gets its turn; one that does not is kept for a moment (UNCLAIMED_MS).
   */
  private moved(seatId: string, from: string | null, to: string | null): void {
    const q = this.queue(seatId);
    if (from !== null && q.current === from) q.current = null;
    if (to?.startsWith(this.prefix)) {
      q.current = to;
      const grant = q.waiters.get(to);
      if (grant) {
        q.waiters.delete(to);
        grant(true);
      } else this.keepUnclaimed(seatId, q, to);
    }
    this.pump(seatId, q);
  }

  private keepUnclaimed(seatId: string, q: SeatQueue, holder: string): void {
    q.unclaimed.add(holder);
    setTimeout(() => {
      if (q.unclaimed.delete(holder)) this.passOn(seatId, holder);
    }, UNCLAIMED_MS).unref();
  }

  /** Takes `holder` out of the line and passes its lease (if it has it) to the head of the line. */
  private passOn(seatId: string, holder: string): void {
    passTurn(this.db, seatId, holder, this.leaseMs, this.fence()).then(
      (r) => (r.moved ? this.moved(seatId, holder, r.handedTo) : this.moved(seatId, holder, null)),
      () => {
        this.releaseLater(seatId, holder);
        this.moved(seatId, holder, null);
      },
    );
  }

  /** With waiters and no turn here, polls the journal; with neither, forgets the seat. */
  private pump(seatId: string, q: SeatQueue): void {
    if (q.polling || q.current !== null) return;
    if (q.waiters.size) void this.poll(seatId, q);
    else if (!q.unclaimed.size && this.seats.get(seatId) === q) this.seats.delete(seatId);
  }

  /**
   * Another controller has the turn (or the lease was freed under a waiter): asks until the lease
   * comes to one of this controller's holders. The poll also moves a free lease to the head of the
   * line wherever it waits, so a line whose head is elsewhere never stalls.
   */
  private async poll(seatId: string, q: SeatQueue): Promise<void> {
    q.polling = true;
    let got: string | null = null;
    while (!got && q.current === null && q.waiters.size) {
      let woken = false;
      q.wake = () => void (woken = true);
      try {
        const suspects = this.suspects;
        got = await pollTurn(
          this.db,
          seatId,
          this.instanceId,
          this.leaseMs,
          this.fence(),
          suspects && { afterMs: suspects.afterMs, found: (s) => suspects.found(seatId, s) },
        );
      } catch (e) {
        // The journal is away: the waiters here end now, not sent (nothing reached the agent),
        // rather than after their 25 s; each leaves the line once the journal answers.
        this.onError("seat turn poll failed", e as Error);
        for (const [holder, grant] of [...q.waiters]) {
          q.waiters.delete(holder);
          grant(e as Error);
          this.passOn(seatId, holder);
        }
      }
      if (!got && !woken) {
        await new Promise<void>((r) => {
          const timer = setTimeout(r, this.hearing ? POLL_LISTENING_MS : POLL_MS);
          q.wake = () => {
            clearTimeout(timer);
            r();
          };
        });
      }
    }
    q.wake = undefined;
    q.polling = false;
    if (got) this.moved(seatId, null, got);
    else this.pump(seatId, q);
  }

  /** A release the journal refused: retried until it commits, or until the lease has expired anyway. */
  releaseLater(seatId: string, holder: string, what = "seat lease release failed"): void {
    releaseLeaseWhenBack(
      this.db,
      seatId,
      holder,
      this.leaseMs,
      (e) => this.onError(`${what}; it expired instead`, e),
      this.fence,
    );
  }
}

/**
 * Runs `fn` in the seat's turn (one wait budget for deliveries, notices and stops). A
 * delivery enters the turn at admission, to keep admission order, and passes it as `entered`.
 * `fn` may settle the turn through its own statement (`turn.settled`); otherwise the turn is
 * given back here with one statement.
 */
export async function withSeatTurn<T>(
  turns: SeatTurns,
  seat: {
    seatId: string;
    holder: string;
    signal?: AbortSignal | undefined;
    waitMs?: number | undefined;
    entered?: Promise<SeatTurn>;
  },
  fn: (turn: SeatTurn) => Promise<T>,
): Promise<T> {
  const turn = await (seat.entered ??
    turns.enter(seat.seatId, seat.holder, undefined, seat.waitMs ?? SEAT_TURN_WAIT_MS, seat.signal));
  try {
    return await fn(turn);
  } finally {
    await turns.leave(turn);
  }
}
