/**
 * message_seat, step two: the seat's turn. Deliveries to one seat take turns (ADR 0207, VUH-2779), in the
 * order this controller admitted them; the turn is an in-process FIFO per seat over the database lease
 * (one row per seat in seat_turns), so the two are one thing here: the FIFO orders the waiters, the lease
 * orders the controllers. The admission statement (admit-statement.ts) takes a free seat's lease, the settle
 * statement (settle-statements.ts) gives it back or hands it on; the statements below cover the rest.
 */
import type { Db } from "../db/open.js";
import { sql } from "drizzle-orm";
import { p, statement } from "../journal/statements.js";
import { leaseHeldGuard, type InstanceEpoch } from "../journal/lease-guard.js";

/*
 * Deliveries to one seat take turns (ADR 0207, VUH-2779), in the order this controller
 * admitted them: a later message waits for the one in flight, bounded at 25 s, then takes
 * the ordinary checks without the turn. Within this process a FIFO per seat orders the
 * waiters and the database lease (below) is handed from one to the next inside the
 * settle statement, so a busy seat costs no extra statement per delivery; across
 * controllers the lease alone decides (whoever polls first after a release).
 */
/** How long a message waits for the seat's turn before it takes the ordinary checks anyway. */
export const SEAT_TURN_WAIT_MS = 25_000;

/** The seat's turn as one delivery (or notice, or stop) holds it. */
export interface SeatTurn {
  readonly seatId: string;
  readonly holder: string;
  /** This holder has the seat's database lease. False after a 25 s wait: it goes on without the turn. */
  readonly held: boolean;
  readonly waitedMs: number;
  /** The holder the settle statement should hand the lease to (the next local waiter), or null to release it. */
  nextHolder(): string | null;
  /** The settle statement moved the lease: `handed` to `nextHolder()`, or released. */
  settled(handed: boolean): void;
  /** The lease was moved (or never held): nothing left to give back. */
  readonly finished: boolean;
}

type Grant = "lease" | "free" | "timeout";

interface Waiter {
  holder: string;
  grant: (g: Grant) => void;
}

interface SeatQueue {
  /** A local delivery is in its turn (or polling the lease for it). */
  busy: boolean;
  waiters: Waiter[];
}

export class SeatTurns {
  private readonly seats = new Map<string, SeatQueue>();

  constructor(
    private readonly db: Db,
    private readonly leaseMs: number,
    private readonly onError: (what: string, e: Error) => void = () => {},
    /** This instance's (id, epoch): every lease statement is refused unless that lease is live (ADR 0036). */
    private readonly fence: () => InstanceEpoch | undefined = () => undefined,
  ) {}

  /** Local waiters for a seat (tests and the dashboard). */
  waiting(seatId: string): number {
    return this.seats.get(seatId)?.waiters.length ?? 0;
  }

  /**
   * Enters the seat's turn. `leaseTaken`: the admission statement already took the lease as
   * `holder`. Resolves once it is this holder's turn, or after `waitMs` without it.
   */
  async enter(seatId: string, holder: string, leaseTaken: boolean, waitMs = SEAT_TURN_WAIT_MS, signal?: AbortSignal): Promise<SeatTurn> {
    const started = performance.now();
    const deadline = started + waitMs;
    let q = this.seats.get(seatId);
    if (!q) this.seats.set(seatId, (q = { busy: false, waiters: [] }));
    let held = false;
    if (leaseTaken && !q.busy && !q.waiters.length) {
      // The lease was free at admission and nobody here is ahead of this delivery.
      q.busy = true;
      held = true;
    } else {
      // A delivery admitted earlier is still polling for the lease the previous settle released:
      // give it back and take the place in line, so admission order holds.
      if (leaseTaken) void releaseLease(this.db, seatId, holder, this.fence()).catch(() => this.releaseLater(seatId, holder));
      let grant: Grant = "free";
      if (q.busy || q.waiters.length) {
        grant = await new Promise<Grant>((resolve) => {
          const w: Waiter = { holder, grant: resolve };
          q.waiters.push(w);
          const give = (g: Grant) => {
            clearTimeout(timer);
            signal?.removeEventListener("abort", abort);
            resolve(g);
          };
          w.grant = give;
          const leave = () => {
            const i = q.waiters.indexOf(w);
            if (i >= 0) q.waiters.splice(i, 1);
            give("timeout");
          };
          const timer = setTimeout(leave, Math.max(0, deadline - performance.now()));
          const abort = () => leave();
          signal?.addEventListener("abort", abort, { once: true });
        });
      }
      q.busy = grant !== "timeout" || q.busy;
      if (grant === "lease") held = true;
      else if (grant === "free") {
        // First here: another controller may still hold the seat.
        held = await pollLease(this.db, seatId, holder, this.leaseMs, deadline, signal, this.fence).catch((e: Error) => {
          this.handOn(seatId, undefined);
          throw e;
        });
        if (!held) this.handOn(seatId, undefined);
      }
    }
    const waitedMs = performance.now() - started;
    let done = !held;
    let next: string | null = null;
    const turn: SeatTurn = {
      seatId,
      holder,
      held,
      waitedMs,
      get finished() {
        return done;
      },
      nextHolder: () => (next = held ? (q.waiters[0]?.holder ?? null) : null),
      settled: (handed) => {
        if (done) return;
        done = true;
        this.handOn(seatId, handed ? (next ?? undefined) : undefined, holder);
      },
    };
    return turn;
  }

  /** Gives a turn back without a settle statement (a notice, a stop, a failed settle). */
  async leave(turn: SeatTurn): Promise<void> {
    if (turn.finished) return;
    const next = turn.nextHolder();
    try {
      const handed = next ? await handLease(this.db, turn.seatId, turn.holder, next, this.leaseMs, this.fence()) : (await releaseLease(this.db, turn.seatId, turn.holder, this.fence()), false);
      turn.settled(handed);
    } catch {
      // Given back once the journal answers again; the next local waiter polls for it.
      this.releaseLater(turn.seatId, turn.holder);
      turn.settled(false);
    }
  }

  /**
   * Gives a turn back after its settle statement failed, without waiting for the journal: the
   * turn passes on now (the next waiter polls for the lease) and the lease is released once the
   * journal answers, or expires. A journal that answers nothing would otherwise hold the lead's
   * answer for a second deadline, that of the release statement.
   */
  leaveLater(turn: SeatTurn): void {
    if (turn.finished) return;
    this.releaseLater(turn.seatId, turn.holder, "seat lease release after a failed settle failed");
    turn.settled(false);
  }

  /**
   * The turn passed on: to the waiter the lease was handed to (`handedTo`), else to the head
   * waiter, who then polls the lease itself. A handed-to waiter that already gave up gets its
   * lease moved on (or released) in the background.
   */
  private handOn(seatId: string, handedTo: string | undefined, from?: string): void {
    const q = this.seats.get(seatId);
    if (!q) return;
    if (handedTo) {
      const i = q.waiters.findIndex((w) => w.holder === handedTo);
      if (i >= 0) {
        const [w] = q.waiters.splice(i, 1);
        w!.grant("lease");
        return;
      }
      // Gone after 25 s: the lease is in its name; move it to the new head, or give it back.
      const head = q.waiters.shift();
      const fix = head ? handLease(this.db, seatId, handedTo, head.holder, this.leaseMs, this.fence()).then((ok) => head.grant(ok ? "lease" : "free")) : releaseLease(this.db, seatId, handedTo, this.fence());
      void fix.catch(() => {
        this.releaseLater(seatId, handedTo, `seat lease of ${from ?? handedTo} could not be moved`);
        head?.grant("free");
      });
      if (!head) this.idle(seatId, q);
      return;
    }
    const head = q.waiters.shift();
    if (head) head.grant("free");
    else this.idle(seatId, q);
  }

  /** A release the journal refused: retried until it commits, or until the lease has expired anyway. */
  private releaseLater(seatId: string, holder: string, what = "seat lease release failed"): void {
    releaseLeaseWhenBack(this.db, seatId, holder, this.leaseMs, (e) => this.onError(`${what}; it expired instead`, e), this.fence);
  }

  private idle(seatId: string, q: SeatQueue): void {
    q.busy = false;
    if (!q.waiters.length) this.seats.delete(seatId);
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
  seat: { seatId: string; holder: string; leaseTaken?: boolean; signal?: AbortSignal | undefined; waitMs?: number | undefined; entered?: Promise<SeatTurn> },
  fn: (turn: SeatTurn) => Promise<T>,
): Promise<T> {
  const turn = await (seat.entered ?? turns.enter(seat.seatId, seat.holder, seat.leaseTaken ?? false, seat.waitMs ?? SEAT_TURN_WAIT_MS, seat.signal));
  try {
    return await fn(turn);
  } finally {
    await turns.leave(turn);
  }
}

/*
 * The lease. One delivery per seat at a time across every controller on the journal (ADR 0207,
 * VUH-2779): a lease row per seat. The hot path takes it inside the admission statement
 * (admit.ts) and gives it back, or hands it on, inside the settle statement
 * (settle-statements.ts). These are the prepared statements for the other cases: a seat that
 * was busy at admission, a notice, a stop, and a lease given back without a settle. No
 * connection is held while waiting; a lease whose holder died expires and is taken over,
 * and recovery frees at once the leases of a controller whose instance lease expired
 * (journal/instances.ts, ADR 0036).
 */
const POLL_MS = 25;

// ADR 0036: each lease statement names its instance's (id, epoch) and does nothing unless that lease
// is live. Null only for the tests and tools that call these without an instance.
const fenced = () => sql`(${p("instance")}::text is null or ${leaseHeldGuard()})`;
const fenceValues = (f: InstanceEpoch | undefined) => ({ instance: f?.instance ?? null, epoch: f?.epoch ?? null });

// A holder names one delivery (or notice, or stop) of one controller, so a lease already in
// its name is its own: a settle its controller gave up on (no answer within the deadline,
// ADR 0033) can still commit later and hand the lease to the next waiter, which then polls
// for it as for a free seat. It takes it at once; it waited out the 25 s before.
const takeStatement = statement<Record<string, unknown>>("take_turn", () => sql`
insert into seat_turns (seat_id, holder, expires_at) select ${p("seatId")}::text, ${p("holder")}::text, now() + make_interval(secs => ${p("leaseSeconds")}::float8) where ${fenced()}
on conflict (seat_id) do update set holder = excluded.holder, expires_at = excluded.expires_at where seat_turns.expires_at < now() or seat_turns.holder = excluded.holder
returning holder
`);

const releaseStatement = statement<Record<string, unknown>>("release_turn", () => sql`
delete from seat_turns where seat_id = ${p("seatId")}::text and holder = ${p("holder")}::text and ${fenced()}
`);

const handStatement = statement<Record<string, unknown>>("hand_turn", () => sql`
update seat_turns set holder = ${p("next")}::text, expires_at = now() + make_interval(secs => ${p("leaseSeconds")}::float8)
where seat_id = ${p("seatId")}::text and holder = ${p("holder")}::text and ${fenced()} returning holder
`);

/** One try: true when `holder` now has the seat's lease. */
export async function tryTakeLease(db: Db, seatId: string, holder: string, leaseMs: number, fence?: InstanceEpoch): Promise<boolean> {
  const rows = await takeStatement(db).run({ seatId, holder, leaseSeconds: leaseMs / 1000, ...fenceValues(fence) });
  return rows[0]?.holder === holder;
}

/** Polls for the lease until `deadline` (a `performance.now()` time); false when it stayed held. */
export async function pollLease(db: Db, seatId: string, holder: string, leaseMs: number, deadline: number, signal?: AbortSignal, fence: () => InstanceEpoch | undefined = () => undefined): Promise<boolean> {
  for (;;) {
    if (await tryTakeLease(db, seatId, holder, leaseMs, fence())) return true;
    if (performance.now() >= deadline || signal?.aborted) return false;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

export async function releaseLease(db: Db, seatId: string, holder: string, fence?: InstanceEpoch): Promise<void> {
  await releaseStatement(db).run({ seatId, holder, ...fenceValues(fence) });
}

const RELEASE_RETRY_MS = 250;

/**
 * Releases a lease whose release failed (the journal was away), retrying until it commits or
 * until the lease has expired by itself. Without it the seat stayed taken for the whole lease
 * after the database came back, though its delivery was over (verify: calls stuck 11-16 s
 * behind such leases at each database restart). Deletes only a lease still in `holder`'s name.
 */
export function releaseLeaseWhenBack(db: Db, seatId: string, holder: string, leaseMs: number, onGiveUp: (e: Error) => void, fence: () => InstanceEpoch | undefined = () => undefined): void {
  const until = performance.now() + leaseMs;
  const attempt = () => {
    releaseLease(db, seatId, holder, fence()).catch((e: Error) => {
      if (performance.now() + RELEASE_RETRY_MS >= until) return onGiveUp(e);
      setTimeout(attempt, RELEASE_RETRY_MS).unref();
    });
  };
  setTimeout(attempt, RELEASE_RETRY_MS).unref();
}

/** Moves a lease this process holds to another of its deliveries; false when it was not held. */
export async function handLease(db: Db, seatId: string, holder: string, next: string, leaseMs: number, fence?: InstanceEpoch): Promise<boolean> {
  const rows = await handStatement(db).run({ seatId, holder, next, leaseSeconds: leaseMs / 1000, ...fenceValues(fence) });
  return rows.length === 1;
}

export interface SeatLease {
  release(): Promise<void>;
}

/** Takes the seat's lease, or returns undefined when it stayed held for `waitMs` (tests and tools). */
export async function takeSeatLease(db: Db, seatId: string, holder: string, leaseMs: number, waitMs: number): Promise<SeatLease | undefined> {
  if (!(await pollLease(db, seatId, holder, leaseMs, performance.now() + waitMs))) return undefined;
  let released = false;
  return {
    release: async () => {
      if (released) return;
      await releaseLease(db, seatId, holder);
      released = true;
    },
  };
}
