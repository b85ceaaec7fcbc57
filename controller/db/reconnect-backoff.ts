/**
 * How long a pooled PostgreSQL connection waits before it reconnects after failed connects.
 * postgres.js's default grows with the pool's shared count of failures to 10-20 s, so once a
 * restarted database was back the controller still sat out that delay with every call queued
 * behind it (verify: calls stuck 11-16 s, and lead timeouts, at each database restart).
 * postgres.js reconnects only for a waiting query, so a short cap costs a down server a few
 * refused connects a second per connection, and a caller learns `journal_unavailable` within it.
 */

/** The longest wait between a connection's reconnects. */
export const RECONNECT_CAP_S = 0.5;

/** Seconds before the next connect after `retries` failures in a row: 25 ms doubling to the cap, jittered so the pool does not reconnect in step. */
export function reconnectBackoffSeconds(retries: number): number {
  const step = Math.min(0.025 * 2 ** Math.max(0, retries - 1), RECONNECT_CAP_S);
  return step * (0.5 + Math.random() / 2);
}
