/**
 * message_seat, step two: the seat's turn, in the fleet-wide admission order (ADR 0039). The line is in the
 * journal (seat_waiters: a row per waiting delivery, notice or stop of any replica), the turn is the seat's
 * lease (seat_turns). The admission statement (admit.ts) takes a free seat's lease or joins the line, the
 * settle statement (settle.ts) hands the lease to the head of the line: both embed this file's SQL. Here is
 * the rest: which of this controller's holders waits, the poll that claims a lease handed to one, and a turn
 * given back without a settle. Every statement that writes carries its writer's lease fence (ADR 0036).
 */
import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { FencedWriteError, type InstanceEpoch, leaseHeldGuard } from "../journal/lease-guard.js";
import { asBool, p, type Row, statement } from "../journal/statements.js";
import type { SeatTurn, TurnAdmission } from "./receipt-types.js";
import { type HandOffs, hearHandOffs, notifyHolder } from "./turn-hand-offs.js";
import { suspectSql, type TurnSuspect } from "./turn-takeover.js";

/** A lease handed to another replica's waiter must be claimed this soon: a dead one holds the line no longer. */
export const TURN_CLAIM_MS = 3_000;

/** A controller with waiters and no turn on a seat polls this often; less often while it hears hand-offs. */
const POLL_MS = 25;
const POLL_LISTENING_MS = 100;

/** A lease handed to a holder of this controller that is not waiting here is kept for it this long. */
const UNCLAIMED_MS = 1_000;

/** A release the journal refused is tried again this often, until the lease would have expired (ADR 0032). */
const RELEASE_RETRY_MS = 250;

/**
 * Whether the waiter row `w` may still take its turn: its wait is not over (the 25 s rule) and its controller's
 * instance lease is live by the database's clock (ADR 0036). The one place that judges it.
 */
export const waiterIsLive = (w: string) =>
  sql.raw(
    `(${w}.expires_at > now() and exists (select 1 from controller_instances i where i.id = split_part(${w}.holder, ':', 1) and i.lease_expires_at > now()))`,
  );

/** Whether an eligible waiter is in the seat's line (the admission takes a free lease only when none is). */
export const lineIsEmpty = (seat: SQL) =>
  sql`not exists (select 1 from seat_waiters w where w.seat_id = ${seat} and ${waiterIsLive("w")})`;

/** ADR 0036: writes nothing unless the lease of (`instance`, `epoch`) is live; null for tests without one. */
export const fenced = () => sql`(${p("instance")}::text is null or ${leaseHeldGuard()})`;

/** The seat's line, oldest admission first (the fleet-wide order). */
const inLine = (w: string) => sql.raw(`order by ${w}.admitted_at, ${w}.holder`);

/** The expiry of a lease `from` hands to `next`: a whole lease within one controller, the claim window across. */
const handedExpiry = (next: string, from: SQL) =>
  sql`now() + make_interval(secs => case when split_part(${sql.raw(next)}, ':', 1) = split_part(${from}, ':', 1) then ${p("leaseSeconds")}::float8 else ${p("claimSeconds")}::float8 end)`;

/**
 * Takes the seat's lease for the row `values` selects (seat_id, holder, expires_at) when it is free, expired,
 * or the holder's own already (a settle its controller gave up on can commit later, ADR 0033).
 */
export const takeLeaseSql = (values: SQL) => sql`insert into seat_turns (seat_id, holder, expires_at) ${values}
  on conflict (seat_id) do update set holder = excluded.holder, expires_at = excluded.expires_at
  where seat_turns.expires_at < now() or seat_turns.holder = excluded.holder
  returning holder`;

/**
 * CTEs that give `holder`'s lease on `seatId` to the head of the line (`handed`; its row leaves the line), or
 * release it when nobody waits (`released`); `notified` tells another replica its holder got it.
 */
export function handOnSql(fence: SQL): SQL {
  return sql`
next as (
  select w.holder from seat_waiters w
  where w.seat_id = ${p("seatId")}::text and w.holder <> ${p("holder")}::text and ${waiterIsLive("w")} ${inLine("w")} limit 1
),
released as (
  delete from seat_turns where seat_id = ${p("seatId")}::text and holder = ${p("holder")}::text and not exists (select 1 from next) and ${fence} returning seat_id
),
handed as (
  update seat_turns set holder = next.holder, expires_at = ${handedExpiry("next.holder", sql`${p("holder")}::text`)}
  from next where seat_turns.seat_id = ${p("seatId")}::text and seat_turns.holder = ${p("holder")}::text and ${fence} returning next.holder as holder
),
dequeued as (
  delete from seat_waiters where holder in (select holder from handed) returning holder
),
notified as (
  select ${notifyHolder("holder")} from handed where split_part(holder, ':', 1) <> split_part(${p("holder")}::text, ':', 1)
)`;
}

/** The final select's column that makes `notified` run (a CTE that only reads runs only when referenced). */
export const NOTIFIED = sql.raw("(select count(*) from notified)::int as notified");

/**
 * A controller with waiters and no turn on the seat claims a lease handed to one of its holders, or moves a
 * free (or expired) lease to the head of the line, wherever it waits; sweeps expired waiters; names a suspect.
 */
const pollStatement = statement<Row>(
  "poll_turn",
  () => sql`
with ours as (
  select holder from seat_turns where seat_id = ${p("seatId")}::text and split_part(holder, ':', 1) = ${p("self")}::text
),
head as (
  select w.holder from seat_waiters w where w.seat_id = ${p("seatId")}::text and ${waiterIsLive("w")} ${inLine("w")} limit 1
),
cand as (
  select holder from ours union all select holder from head where not exists (select 1 from ours)
),
moved as (
  ${takeLeaseSql(sql`select ${p("seatId")}::text, holder, ${handedExpiry("holder", sql`${p("self")}::text`)} from cand where ${fenced()}`)}
),
dequeued as (
  delete from seat_waiters where holder in (select holder from moved) returning holder
),
swept as (
  delete from seat_waiters where seat_id = ${p("seatId")}::text and expires_at < now() and ${fenced()} returning holder
),
notified as (
  select ${notifyHolder("holder")} from moved where split_part(holder, ':', 1) <> ${p("self")}::text
)
select (select holder from moved where split_part(holder, ':', 1) = ${p("self")}::text) as holder, ${NOTIFIED}, ${fenced()} as live,
  (${suspectSql()}) as suspect
`,
);

// Gives `holder`'s turn up: leaves the line, and its lease (if it has it) goes to the head of the line.
const passStatement = statement<Row>(
  "pass_turn",
  () => sql`
with mine as (
  delete from seat_waiters where holder = ${p("holder")}::text and ${fenced()} returning holder
),
${handOnSql(fenced())}
select (select holder from handed) as handed_to, ${NOTIFIED}
`,
);

// Deletes only a lease still in `holder`'s name: it never frees another delivery's turn.
const releaseStatement = statement<Row>(
  "release_turn",
  () =>
    sql`delete from seat_turns where seat_id = ${p("seatId")}::text and holder = ${p("holder")}::text and ${fenced()}`,
);

/** Who writes a seat-turn statement: the journal, the lease it grants, its instance's fence (absent in tests). */
export type TurnWriter = { readonly db: Db; readonly leaseMs: number; readonly fence?: InstanceEpoch | undefined };

/** Runs a seat-turn statement as `w`. With `what`, a refused fence throws rather than look like a busy seat. */
export async function runTurnStatement(s: typeof passStatement, w: TurnWriter, values: Row, what?: string) {
  const lease = { leaseSeconds: w.leaseMs / 1000, claimSeconds: TURN_CLAIM_MS / 1000 };
  const fence = { instance: w.fence?.instance ?? null, epoch: w.fence?.epoch ?? null };
  const [row] = await s(w.db).run({ ...values, ...lease, ...fence });
  if (what && w.fence && !asBool(row?.live)) throw new FencedWriteError(w.fence, what);
  return row;
}

/** The holder of `instance` that now has the lease, or null; a suspect past `suspectAfterMs` (ADR 0043). */
export async function pollTurn(w: TurnWriter, seatId: string, instance: string, suspectAfterMs?: number) {
  const values = { seatId, self: instance, staleSeconds: suspectAfterMs === undefined ? null : suspectAfterMs / 1000 };
  const row = await runTurnStatement(pollStatement, w, values, `the seat turn poll of ${instance}`);
  const [id, epoch] = row?.suspect ? String(row.suspect).split(" ") : [];
  const suspect: TurnSuspect | undefined = id ? { instance: id, epoch: Number(epoch) } : undefined;
  return { holder: row?.holder ? String(row.holder) : null, suspect };
}

/** Where `holder`'s lease went: to the head of the line, or null (released, or not its; or a stale fence). */
export async function passTurn(w: TurnWriter, seatId: string, holder: string): Promise<string | null> {
  const row = await runTurnStatement(passStatement, w, { seatId, holder });
  return row?.handed_to ? String(row.handed_to) : null;
}

/** Releases `holder`'s lease on the seat if it still has it; nothing under a stale fence. */
export async function releaseLease(w: TurnWriter, seatId: string, holder: string) {
  await runTurnStatement(releaseStatement, w, { seatId, holder });
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
    this.handOffs = hearHandOffs(db, instanceId, () => this.wakeAll(), onError);
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
   * is not waiting (its admission's answer is on its way, it gave up or was refused) gets UNCLAIMED_MS.
   */
  private moved(seatId: string, from: string | null, to: string | null): void {
    const q = this.queue(seatId);
    if (from !== null && q.current === from) q.current = null;
    if (to?.startsWith(`${this.instanceId}:`)) {
      q.current = to;
      const grant = q.waiters.get(to);
      if (grant) {
        q.waiters.delete(to);
        grant(true);
      } else {
        q.unclaimed.add(to);
        setTimeout(() => q.unclaimed.delete(to) && this.passOn(seatId, to), UNCLAIMED_MS).unref();
      }
    }
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

  /** With waiters and no turn here, polls the journal; with neither, forgets the seat. */
  private pump(seatId: string, q: SeatQueue): void {
    if (q.polling || q.current !== null) return;
    if (q.waiters.size) void this.poll(seatId, q);
    else if (!q.unclaimed.size && this.seats.get(seatId) === q) this.seats.delete(seatId);
  }

  /** Another controller has the turn (or it was freed under a waiter): asks until it comes to a holder here. */
  private async poll(seatId: string, q: SeatQueue): Promise<void> {
    q.polling = true;
    let got: string | null = null;
    while (!got && q.current === null && q.waiters.size) {
      let woken = false;
      q.wake = () => void (woken = true);
      try {
        const r = await pollTurn(this.writer(), seatId, this.instanceId, this.suspects?.afterMs);
        if (r.suspect) this.suspects?.found(seatId, r.suspect);
        got = r.holder;
      } catch (e) {
        // The journal is away: the waiters here end now, not sent, rather than after their 25 s.
        this.onError("seat turn poll failed", e as Error);
        for (const [holder, grant] of [...q.waiters]) {
          q.waiters.delete(holder);
          grant(e as Error);
          this.passOn(seatId, holder);
        }
      }
      if (!got && !woken) {
        await new Promise<void>((r) => {
          const timer = setTimeout(r, this.handOffs.hearing ? POLL_LISTENING_MS : POLL_MS);
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
