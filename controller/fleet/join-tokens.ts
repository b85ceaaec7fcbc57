/**
 * Join tokens: single-use, expiring, bound to one machine name. The token carries the fleet
 * CA's fingerprint, so a joining agent can check whom it talks to before it sends the
 * secret (as kubeadm's discovery hash). Only the secret's sha256 is stored.
 */
import { randomBytes } from "node:crypto";
import { and, eq, gt, isNull } from "drizzle-orm";
import { joinTokens } from "../db/schema.js";
import type { Db, Tx } from "../db/open.js";
import { tokenHash } from "../../shared/tokens.js";
import { FleetError, ErrorCode, InvalidArgumentError } from "../../shared/errors.js";
import { isValidName } from "../../shared/ids.js";
import { quoteInput } from "../../shared/public-text.js";

export const DEFAULT_JOIN_TTL_MS = 15 * 60_000;
export const MAX_JOIN_TTL_MS = 7 * 86_400_000;
const PREFIX = "clankie-join";

export interface ParsedJoinToken {
  id: string;
  secret: string;
  caFingerprint: string;
}

export function parseJoinToken(token: string): ParsedJoinToken {
  const parts = token.trim().split(".");
  if (
    parts.length !== 4 ||
    parts[0] !== PREFIX ||
    !/^[0-9a-f]{16}$/.test(parts[1]!) ||
    !/^[A-Za-z0-9_-]{43}$/.test(parts[2]!) ||
    !/^[0-9a-f]{64}$/.test(parts[3]!)
  ) {
    throw new InvalidArgumentError(
      "this is not a clankie join token (expected clankie-join.<id>.<secret>.<ca sha256>)",
    );
  }
  return { id: parts[1]!, secret: parts[2]!, caFingerprint: parts[3]! };
}

export async function issueJoinToken(
  db: Db,
  machine: string,
  ttlMs: number,
  caFingerprint: string,
  now: Date,
): Promise<{ token: string; expiresAt: Date }> {
  if (!isValidName(machine))
    throw new InvalidArgumentError(`machine name ${quoteInput(machine)} must be 1-64 letters, digits, '.', '-' or '_'`);
  if (!Number.isInteger(ttlMs) || ttlMs < 1000 || ttlMs > MAX_JOIN_TTL_MS)
    throw new InvalidArgumentError(`the join token's ttl must be 1 s to 7 days, got ${ttlMs} ms`);
  const id = randomBytes(8).toString("hex");
  const secret = randomBytes(32).toString("base64url");
  const expiresAt = new Date(now.getTime() + ttlMs);
  await db.insert(joinTokens).values({ id, machine, secretHash: tokenHash(secret), expiresAt, createdAt: now });
  return { token: `${PREFIX}.${id}.${secret}.${caFingerprint}`, expiresAt };
}

/** Marks the token used and returns its machine; refuses an unknown, used or expired one. */
export async function redeemJoinToken(tx: Tx | Db, token: string, now: Date): Promise<string> {
  const t = parseJoinToken(token);
  const hash = tokenHash(t.secret);
  const [used] = await tx
    .update(joinTokens)
    .set({ usedAt: now })
    .where(
      and(
        eq(joinTokens.id, t.id),
        eq(joinTokens.secretHash, hash),
        isNull(joinTokens.usedAt),
        gt(joinTokens.expiresAt, now),
      ),
    )
    .returning({ machine: joinTokens.machine });
  if (used) return used.machine;
  const [row] = await tx.select().from(joinTokens).where(eq(joinTokens.id, t.id));
  if (!row || row.secretHash !== hash)
    throw new FleetError(ErrorCode.Unauthenticated, "unknown join token: nothing was registered");
  if (row.usedAt)
    throw new FleetError(
      ErrorCode.Unauthenticated,
      `this join token for ${row.machine} was already used at ${row.usedAt.toISOString()}: nothing was registered; issue a new one with clankie fleet enroll ${row.machine}`,
    );
  throw new FleetError(
    ErrorCode.Unauthenticated,
    `this join token for ${row.machine} expired at ${row.expiresAt.toISOString()}: nothing was registered; issue a new one with clankie fleet enroll ${row.machine}`,
  );
}
