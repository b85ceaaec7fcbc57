/**
 * The seat turn's SQL (ADR 0039): the lease row per seat (seat_turns) and the fleet-wide line of waiters
 * (seat_waiters), shared by every replica on the journal. The admission statement (admit.ts) takes a free
 * seat's lease or joins the line, the settle statement (settle.ts) hands the lease to the head of
 * the line through `handOnSql`; the statements below cover the rest (notices, stops, a remote turn, a turn
 * given back without a settle). Apart from turn.ts so the statements and the in-process side each stay readable.
 * Every statement here that writes carries the writing instance's lease fence (ADR 0036), as the admission
 * and the settle statements do: a replica whose lease expired or whose epoch is stale changes no seat's
 * lease and no line.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { p, statement } from "../journal/statements.js";
import { FencedWriteError, leaseHeldGuard, type InstanceEpoch } from "../journal/lease-guard.js";

/**
 * How long a lease handed to another controller's waiter waits to be claimed (its controller polls every
 * 25 ms). A waiter whose controller died holds the line no longer than this, once it is at its head.
 */
export const TURN_CLAIM_MS = 3_000;

/**
 * Whether the waiter row `w` may still take its turn: its own wait is not over (the 25 s rule, counted
 * from its admission) and its controller's instance lease is live by the database's clock (ADR 0036).
 * The one place that judges a waiter's controller: a replica whose lease expired is skipped at once.
 */
export function waiterIsLive(w: string): SQL {
  return sql.raw(
    `(${w}.expires_at > now() and exists (select 1 from controller_instances i where i.id = split_part(${w}.holder, ':', 1) and i.lease_expires_at > now()))`,
  );
}

/*
 * ADR 0036: each statement names its instance's (id, epoch) in the placeholders `instance` and `epoch`
 * and writes nothing unless that lease is live. Null only for the tests and tools that call these
 * without an instance.
 */
const fenced = () => sql`(${p("instance")}::text is null or ${leaseHeldGuard()})`;
const fenceValues = (f: InstanceEpoch | undefined) => ({ instance: f?.instance ?? null, epoch: f?.epoch ?? null });
const isTrue = (v: unknown) => v === true || v === "t";

/** The seat's line, oldest admission first (the fleet-wide order). */
const inLine = (w: string) => sql.raw(`order by ${w}.admitted_at, ${w}.holder`);

/** The lease's expiry when handed to `next` by `from`: a whole lease within one controller, the claim window across. */
const handedExpiry = (next: string, from: SQL) =>
  sql`now() + make_interval(secs => case when split_part(${sql.raw(next)}, ':', 1) = split_part(${from}, ':', 1) then ${p("leaseSeconds")}::float8 else ${p("claimSeconds")}::float8 end)`;

/**
 * CTEs `next`, `released`, `handed`, `dequeued` for a statement that gives up `holder`'s lease on
 * `seatId`: to the head of the line (its row leaves the line), or released when nobody waits, and
 * `notified`, which tells another controller its holder got the lease (select NOTIFIED so it runs).
 * Parameters: seatId, holder, leaseSeconds, claimSeconds. `handed` returns the new holder. `fence`:
 * the statement's lease fence (ADR 0036); the lease moves only where it holds.
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
 * Tells the controller of `holder` that the lease came to it (turn.ts listens), so a hand-off across
 * replicas waits for no poll. Sent only across replicas: a hand-off within one costs no notification.
 */
function notifyHolder(holder: string): SQL {
  return sql.raw(`pg_notify('${TURN_CHANNEL_PREFIX}' || replace(split_part(${holder}, ':', 1), '-', '_'), '')`);
}

const TURN_CHANNEL_PREFIX = "clankie_turn_";

/** The channel a controller hears its hand-offs on (LISTEN/NOTIFY). */
export function turnChannel(instance: string): string {
  return TURN_CHANNEL_PREFIX + instance.replaceAll("-", "_");
}

interface Listener {
  listen(channel: string, fn: (payload: string) => void): Promise<unknown>;
}

/**
 * Calls `onTurn` when another controller hands one of `instance`'s holders a lease (or may have).
 * Both drivers' clients can listen (postgres.js on a connection of its own, PGlite in process);
 * resolves to a stop function, or undefined when the client cannot.
 */
export async function listenForTurns(
  db: Db,
  instance: string,
  onTurn: () => void,
): Promise<(() => Promise<void>) | undefined> {
  const client = (db as unknown as { $client?: Partial<Listener> }).$client;
  if (typeof client?.listen !== "function") return undefined;
  const sub: unknown = await client.listen(turnChannel(instance), () => onTurn());
  return async () => {
    if (typeof sub === "function") await (sub as () => Promise<void>)();
    else if (sub && typeof (sub as { unlisten?: unknown }).unlisten === "function")
      await (sub as { unlisten: () => Promise<void> }).unlisten();
  };
}

/** Whether an eligible waiter is in the seat's line (the admission takes a free lease only when none is). */
export function lineIsEmpty(seat: SQL): SQL {
  return sql`not exists (select 1 from seat_waiters w where w.seat_id = ${seat} and ${waiterIsLive("w")})`;
}

// A notice or a stop: takes a free seat whose line is empty, else joins the line.
const joinStatement = statement<Record<string, unknown>>(
  "join_turn",
  () => sql`
with lease as (
  insert into seat_turns (seat_id, holder, expires_at)
  select ${p("seatId")}::text, ${p("holder")}::text, now() + make_interval(secs => ${p("leaseSeconds")}::float8)
  where not exists (select 1 from seat_waiters w where w.seat_id = ${p("seatId")}::text and w.holder <> ${p("holder")}::text and ${waiterIsLive("w")}) and ${fenced()}
  on conflict (seat_id) do update set holder = excluded.holder, expires_at = excluded.expires_at
  where seat_turns.expires_at < now() or seat_turns.holder = excluded.holder
  returning holder
),
queued as (
  insert into seat_waiters (holder, seat_id, admitted_at, expires_at)
  select ${p("holder")}::text, ${p("seatId")}::text, now(), now() + make_interval(secs => ${p("waitSeconds")}::float8) where not exists (select 1 from lease) and ${fenced()}
  on conflict (holder) do nothing returning holder
)
select (select count(*) from lease)::int as taken, ${fenced()} as live
`,
);

/**
 * A controller with waiters and no turn of its own on the seat: claims a lease handed to one of its
 * holders, or moves a free (or expired) lease to the head of the line — its own waiter, or another
 * controller's, who then has the claim window to take it up. Returns this controller's holder that
 * now holds the lease, if any. Also sweeps the seat's expired waiters.
 */
const pollStatement = statement<Record<string, unknown>>(
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
  insert into seat_turns (seat_id, holder, expires_at)
  select ${p("seatId")}::text, holder, ${handedExpiry("holder", sql`${p("self")}::text`)} from cand where ${fenced()}
  on conflict (seat_id) do update set holder = excluded.holder, expires_at = excluded.expires_at
  where seat_turns.expires_at < now() or seat_turns.holder = excluded.holder
  returning holder
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

/**
 * Another instance that holds the seat's lease or waits in its line and whose lease renewal is overdue
 * by `staleSeconds` (null: ask nobody), as "id epoch": turn-takeover.ts may ask the seat's agent to fence
 * it (ADR 0043). Overdue is only a reason to ask; the agent's fence is what makes taking over safe.
 */
function suspectSql(): SQL {
  return sql`select i.id || ' ' || i.epoch from controller_instances i
  where ${p("staleSeconds")}::float8 is not null and i.id <> ${p("self")}::text and i.heartbeat_at < now() - make_interval(secs => ${p("staleSeconds")}::float8)
    and (exists (select 1 from seat_turns st where st.seat_id = ${p("seatId")}::text and split_part(st.holder, ':', 1) = i.id)
      or exists (select 1 from seat_waiters w where w.seat_id = ${p("seatId")}::text and split_part(w.holder, ':', 1) = i.id and w.expires_at > now()))
  order by i.id limit 1`;
}

/** An instance whose lease renewal is overdue and that holds a seat's turn or waits for it. */
export interface TurnSuspect {
  instance: string;
  epoch: number;
}

// Gives `holder`'s turn up: leaves the line, and its lease (if it has it) goes to the head of the line.
const passStatement = statement<Record<string, unknown>>(
  "pass_turn",
  () => sql`
with mine as (
  delete from seat_waiters where holder = ${p("holder")}::text and ${fenced()} returning holder
),
${handOnSql(fenced())}
select (select count(*) from released)::int + (select count(*) from handed)::int as moved, (select holder from handed) as handed_to, ${NOTIFIED}
`,
);

const leaseParams = (leaseMs: number) => ({ leaseSeconds: leaseMs / 1000, claimSeconds: TURN_CLAIM_MS / 1000 });

/**
 * True when `holder` took the free seat; false: it is in the seat's line. A FencedWriteError when
 * `fence`'s lease is not live: it neither took the seat nor joined the line.
 */
export async function joinTurn(
  db: Db,
  seatId: string,
  holder: string,
  leaseMs: number,
  waitMs: number,
  fence?: InstanceEpoch,
): Promise<boolean> {
  const [row] = await joinStatement(db).run({
    seatId,
    holder,
    leaseSeconds: leaseMs / 1000,
    waitSeconds: waitMs / 1000,
    ...fenceValues(fence),
  });
  if (fence && !isTrue(row?.live)) throw new FencedWriteError(fence, `the seat turn of ${holder}`);
  return Number(row?.taken) === 1;
}

/**
 * The holder of `instance` that now has the seat's lease, or null. A FencedWriteError when `fence`'s
 * lease is not live: no lease was moved and no waiter swept.
 */
export async function pollTurn(
  db: Db,
  seatId: string,
  instance: string,
  leaseMs: number,
  fence?: InstanceEpoch,
  suspects?: { afterMs: number; found: (s: TurnSuspect) => void },
): Promise<string | null> {
  const [row] = await pollStatement(db).run({
    seatId,
    self: instance,
    ...leaseParams(leaseMs),
    ...fenceValues(fence),
    staleSeconds: suspects ? suspects.afterMs / 1000 : null,
  });
  if (fence && !isTrue(row?.live)) throw new FencedWriteError(fence, `the seat turn poll of ${instance}`);
  if (suspects && row?.suspect) {
    const [id, epoch] = String(row.suspect).split(" ");
    suspects.found({ instance: id!, epoch: Number(epoch) });
  }
  return row?.holder ? String(row.holder) : null;
}

/** `moved`: the lease was `holder`'s and now is `handedTo`'s (null: released). Nothing moves under a stale `fence`. */
export async function passTurn(
  db: Db,
  seatId: string,
  holder: string,
  leaseMs: number,
  fence?: InstanceEpoch,
): Promise<{ moved: boolean; handedTo: string | null }> {
  const [row] = await passStatement(db).run({ seatId, holder, ...leaseParams(leaseMs), ...fenceValues(fence) });
  return { moved: Number(row?.moved) === 1, handedTo: row?.handed_to ? String(row.handed_to) : null };
}

/*
 * The bare lease, for tests and tools that stand in for another controller. A holder names one
 * delivery (or notice, or stop) of one controller, so a lease already in its name is its own: a
 * settle its controller gave up on (ADR 0033) can still commit later and hand it on.
 */
const takeStatement = statement<Record<string, unknown>>(
  "take_turn",
  () => sql`
insert into seat_turns (seat_id, holder, expires_at) select ${p("seatId")}::text, ${p("holder")}::text, now() + make_interval(secs => ${p("leaseSeconds")}::float8) where ${fenced()}
on conflict (seat_id) do update set holder = excluded.holder, expires_at = excluded.expires_at where seat_turns.expires_at < now() or seat_turns.holder = excluded.holder
returning holder
`,
);

const releaseStatement = statement<Record<string, unknown>>(
  "release_turn",
  () => sql`
delete from seat_turns where seat_id = ${p("seatId")}::text and holder = ${p("holder")}::text and ${fenced()}
`,
);

const handStatement = statement<Record<string, unknown>>(
  "hand_turn",
  () => sql`
update seat_turns set holder = ${p("next")}::text, expires_at = now() + make_interval(secs => ${p("leaseSeconds")}::float8)
where seat_id = ${p("seatId")}::text and holder = ${p("holder")}::text and ${fenced()} returning holder
`,
);

/** One try: true when `holder` now has the seat's lease (the line is not consulted). */
export async function tryTakeLease(
  db: Db,
  seatId: string,
  holder: string,
  leaseMs: number,
  fence?: InstanceEpoch,
): Promise<boolean> {
  const rows = await takeStatement(db).run({ seatId, holder, leaseSeconds: leaseMs / 1000, ...fenceValues(fence) });
  return rows[0]?.holder === holder;
}

export async function releaseLease(db: Db, seatId: string, holder: string, fence?: InstanceEpoch): Promise<void> {
  await releaseStatement(db).run({ seatId, holder, ...fenceValues(fence) });
}

/** Moves a lease `holder` has to `next`; false when it was not held (or `fence`'s lease is not live). */
export async function handLease(
  db: Db,
  seatId: string,
  holder: string,
  next: string,
  leaseMs: number,
  fence?: InstanceEpoch,
): Promise<boolean> {
  const rows = await handStatement(db).run({
    seatId,
    holder,
    next,
    leaseSeconds: leaseMs / 1000,
    ...fenceValues(fence),
  });
  return rows.length === 1;
}

const RELEASE_RETRY_MS = 250;

/**
 * Releases a lease whose release failed (the journal was away), retrying until it commits or
 * until the lease has expired by itself. Without it the seat stayed taken for the whole lease
 * after the database came back, though its delivery was over (verify: calls stuck 11-16 s
 * behind such leases at each database restart). Deletes only a lease still in `holder`'s name.
 */
export function releaseLeaseWhenBack(
  db: Db,
  seatId: string,
  holder: string,
  leaseMs: number,
  onGiveUp: (e: Error) => void,
  fence: () => InstanceEpoch | undefined = () => undefined,
): void {
  const until = performance.now() + leaseMs;
  const attempt = () => {
    releaseLease(db, seatId, holder, fence()).catch((e: Error) => {
      if (performance.now() + RELEASE_RETRY_MS >= until) return onGiveUp(e);
      setTimeout(attempt, RELEASE_RETRY_MS).unref();
    });
  };
  setTimeout(attempt, RELEASE_RETRY_MS).unref();
}

export interface SeatLease {
  release(): Promise<void>;
}

/**
 * Takes the seat's lease, polling until `waitMs` pass; undefined when it stayed held (tests and tools),
 * or when `fence`'s lease is not live (then nothing was taken). Its release carries the same fence.
 */
export async function takeSeatLease(
  db: Db,
  seatId: string,
  holder: string,
  leaseMs: number,
  waitMs: number,
  fence?: InstanceEpoch,
): Promise<SeatLease | undefined> {
  const deadline = performance.now() + waitMs;
  while (!(await tryTakeLease(db, seatId, holder, leaseMs, fence))) {
    if (performance.now() >= deadline) return undefined;
    await new Promise((r) => setTimeout(r, 25));
  }
  let released = false;
  return {
    release: async () => {
      if (released) return;
      await releaseLease(db, seatId, holder, fence);
      released = true;
    },
  };
}
