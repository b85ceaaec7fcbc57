/**
 * How a notice or a stop enters a seat's turn (ADR 0039). It comes without an admission statement, so it
 * joins the fleet-wide line in a statement of its own (join_turn), taking the seat's lease at once when the
 * seat is free and nobody live waits; then it waits like a delivery (turn.ts) and gives the turn back with
 * pass_turn, which hands it to the head of the line as a settle does. Off the delivery's hot path.
 */
import { sql } from "drizzle-orm";
import { p, type Row, statement } from "../journal/statements.js";
import type { SeatTurn, TurnAdmission } from "./receipt-types.js";
import type { SeatTurns } from "./turn.js";
import { fenced, runTurnStatement, takeLeaseSql, type TurnWriter, waiterIsLive } from "./turn-statements.js";

// Takes a free seat whose line is empty (of anyone else), else joins the line.
const joinStatement = statement<Row>(
  "join_turn",
  () => sql`
with lease as (
  ${takeLeaseSql(sql`select ${p("seatId")}::text, ${p("holder")}::text, now() + make_interval(secs => ${p("leaseSeconds")}::float8)
  where not exists (select 1 from seat_waiters w where w.seat_id = ${p("seatId")}::text and w.holder <> ${p("holder")}::text and ${waiterIsLive("w")}) and ${fenced()}`)}
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
 * True when `holder` took the free seat; false: it is in the seat's line until `waitMs` pass. A
 * FencedWriteError when the writer's lease is not live: it neither took the seat nor joined the line.
 */
export async function joinTurn(w: TurnWriter, seatId: string, holder: string, waitMs: number): Promise<boolean> {
  const values = { seatId, holder, waitSeconds: waitMs / 1000 };
  const row = await runTurnStatement(joinStatement, w, values, `the seat turn of ${holder}`);
  return Number(row?.taken) === 1;
}

/** Enters the seat's turn for a notice or a stop: joins the line, then waits for the turn like a delivery. */
export function joinSeatTurn(
  turns: SeatTurns,
  seat: { seatId: string; holder: string; waitMs: number; signal?: AbortSignal | undefined },
): Promise<SeatTurn> {
  const joined = joinTurn(turns.writer(), seat.seatId, seat.holder, seat.waitMs);
  const admission = joined.then((took): TurnAdmission => (took ? "lease" : "queued"));
  return turns.enter(seat.seatId, seat.holder, admission, seat.waitMs, seat.signal);
}
