/**
 * The seat turn's statements (ADR 0039). The line is in the journal (seat_waiters: a row per waiting
 * delivery, notice or stop of any replica), the turn is the seat's lease (seat_turns). The admission
 * statement (admit.ts) takes a free seat's lease or joins the line, the settle statement (settle.ts) hands
 * the lease to the head of the line: both embed this file's SQL. Here are the rest: the poll that claims a
 * lease handed to one of a replica's holders, a turn given back without a settle, and a lease released.
 * Every statement that writes carries its writer's lease fence (ADR 0036). turn.ts decides when each runs.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { FencedWriteError, type InstanceEpoch, leaseHeldGuard } from "../journal/lease-guard.js";
import { asBool, p, type Row, statement } from "../journal/statements.js";
import { notifyHolder } from "./turn-hand-offs.js";
import { suspectSql, type TurnSuspect } from "./turn-takeover.js";

/** A lease handed to another replica's waiter must be claimed this soon: a dead one holds the line no longer. */
export const TURN_CLAIM_MS = 3_000;

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
  select ${notifyHolder("holder", sql`${p("seatId")}::text`)} from handed where split_part(holder, ':', 1) <> split_part(${p("holder")}::text, ':', 1)
)`;
}

/** The final select's column that makes `notified` run (a CTE that only reads runs only when referenced). */
export const NOTIFIED = sql.raw("(select count(*) from notified)::int as notified");

/**
 * A controller with waiters claims a lease handed to one of its holders (other than `current`, its holder in
 * its turn, whose lease is never re-taken here), or moves a free (or expired) lease to the head of the line,
 * wherever it waits; sweeps expired waiters; names a suspect.
 */
const pollStatement = statement<Row>(
  "poll_turn",
  () => sql`
with ours as (
  select holder from seat_turns where seat_id = ${p("seatId")}::text and split_part(holder, ':', 1) = ${p("self")}::text
    and holder is distinct from ${p("current")}::text
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
  select ${notifyHolder("holder", sql`${p("seatId")}::text`)} from moved where split_part(holder, ':', 1) <> ${p("self")}::text
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

/**
 * The holder of `instance` that now has the lease, or null; a suspect past `suspectAfterMs` (ADR 0043).
 * `current` is the instance's holder in its turn, if any: its own lease is not one to claim.
 */
export async function pollTurn(
  w: TurnWriter,
  seatId: string,
  instance: string,
  current: string | null,
  suspectAfterMs?: number,
) {
  const stale = suspectAfterMs === undefined ? null : suspectAfterMs / 1000;
  const values = { seatId, self: instance, current, staleSeconds: stale };
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
