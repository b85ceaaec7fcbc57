/**
 * How a replica hears that another one handed a seat's lease to one of its holders (ADR 0039): the
 * statement that hands it on notifies the receiving replica's channel (LISTEN/NOTIFY) with the seat's id,
 * and that replica's poll of that seat looks at once, so a hand-off across replicas waits for no poll and
 * wakes no other seat's. The poll stays behind it for a client that cannot listen (behind a pooler in
 * transaction mode nothing is heard) and a lost notification.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/open.js";

/** A controller instance's channel is this prefix and its id, with `-` read as `_`. */
const CHANNEL = "clankie_turn_";

/**
 * The expression that tells the controller of the holder column `holder` that the lease of `seat` came to
 * it. Statements select it only across replicas: a hand-off within one costs no notification.
 */
export function notifyHolder(holder: string, seat: SQL): SQL {
  return sql`pg_notify(${sql.raw(`'${CHANNEL}' || replace(split_part(${holder}, ':', 1), '-', '_')`)}, ${seat})`;
}

/** One replica's ear for hand-offs to it. */
export interface HandOffs {
  /** Hand-offs are heard: a poll can wait longer between its looks. */
  readonly hearing: boolean;
}

/**
 * Calls `onHandOff` with the seat whenever another controller hands one of `instance`'s holders its lease,
 * until the database is closed; with undefined for a notification that names no seat (a replica from before
 * the seat was named, during a rolling upgrade: every seat looks). Both drivers' clients can listen
 * (postgres.js on a connection of its own, PGlite in process); one that cannot leaves `hearing` false, and
 * one that fails says why to `onError`.
 */
export function hearHandOffs(
  db: Db,
  instance: string,
  onHandOff: (seatId: string | undefined) => void,
  onError: (what: string, e: Error) => void,
): HandOffs {
  const ear = { hearing: false };
  listen(db, CHANNEL + instance.replaceAll("-", "_"), onHandOff).then(
    (heard) => void (ear.hearing = heard),
    (e: Error) => onError("seat turn hand-offs cannot be heard; polling for them", e),
  );
  return ear;
}

interface Listener {
  listen(channel: string, fn: (payload: string) => void): Promise<unknown>;
}

/** Resolves true once `channel` is listened to, false when the client cannot listen. */
async function listen(db: Db, channel: string, fn: (seatId: string | undefined) => void): Promise<boolean> {
  const client = (db as unknown as { $client?: Partial<Listener> }).$client;
  if (typeof client?.listen !== "function") return false;
  await client.listen(channel, (payload) => fn(payload || undefined));
  return true;
}
