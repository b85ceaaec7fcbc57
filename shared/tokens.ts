/** Bearer tokens: generated with 256 bits of entropy, compared in constant time, stored hashed. */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export function newToken(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString("base64url")}`;
}

export function tokenHash(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

export function tokensEqual(expected: string, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  const a = createHash("sha256").update(expected).digest();
  const b = createHash("sha256").update(presented).digest();
  return timingSafeEqual(a, b);
}

/** `tokensEqual(expected, …)` with the expected token's digest taken once (a check per request on the agent). */
export function tokenMatcher(expected: string): (presented: string | undefined) => boolean {
  const a = createHash("sha256").update(expected).digest();
  return (presented) => presented !== undefined && timingSafeEqual(a, createHash("sha256").update(presented).digest());
}

/** The token from an `Authorization: Bearer …` header value, if there is one. */
export function bearerFrom(header: string | string[] | null | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value);
  return match?.[1];
}
