/**
 * How a replica hears that another one handed a seat's lease to one of its holders (ADR 0039): the
 * statement that hands it on notifies the receiving replica's channel (LISTEN/NOTIFY), and that replica's
 * seat turns listen on it, so a hand-off across replicas waits for no poll. The poll stays behind it for a
 * client that cannot listen (behind a pooler in transaction mode nothing is heard) and a lost notification.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/open.js";

/** A controller instance's channel is this prefix and its id, with `-` read as `_`. */
const CHANNEL = "clankie_turn_";

/**
 * The expression that tells the controller of the holder column `holder` that the lease came to it.
 * Statements select it only across replicas: a hand-off within one costs no notification.
 */
export function notifyHolder(holder: string): SQL {
  return sql.raw(`pg_notify('${CHANNEL}' || replace(split_part(${holder}, ':', 1), '-', '_'), '')`);
}

/** One replica's ear for hand-offs to it. */
export interface HandOffs {
  /** Hand-offs are heard: a poll can wait longer between its looks. */
  readonly hearing: boolean;
}

/**
 * Calls `onHandOff` whenever another controller hands one of `instance`'s holders a lease (or may have),
 * until the database is closed. Both drivers' clients can listen (postgres.js on a connection of its own,
 * PGlite in process); one that cannot leaves `hearing` false, and one that fails says why to `onError`.
 */
export function hearHandOffs(
  db: Db,
  instance: string,
  onHandOff: () => void,
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
async function listen(db: Db, channel: string, fn: () => void): Promise<boolean> {
  const client = (db as unknown as { $client?: Partial<Listener> }).$client;
  if (typeof client?.listen !== "function") return false;
  await client.listen(channel, () => fn());
  return true;
}
