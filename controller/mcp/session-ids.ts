/**
 * MCP session ids every replica accepts (issue 34 item 3, ADR 0037): the id carries what a replica
 * needs to serve the session (its conversation and the protocol version it was opened with) and an
 * HMAC under the fleet's session key (leads/fleet-secrets.ts), so a load balancer needs no stickiness
 * and nothing is written per session. The HMAC also covers the lead token's hash without carrying
 * it: a session only ever works with the token that opened it, so a token rotated or revoked through
 * any replica ends its sessions on every replica (within the token cache's 2 s).
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

const VERSION = "v1";

export interface SessionClaim {
  conversationId: string;
  protocolVersion: string;
}

export function newSessionKey(): string {
  return randomBytes(32).toString("hex");
}

export class SessionIds {
  private readonly key: Buffer;

  constructor(keyHex: string) {
    this.key = Buffer.from(keyHex, "hex");
    if (this.key.length < 32) throw new Error("the fleet's MCP session key is shorter than 32 bytes");
  }

  /** A new session id for the token whose hash is `tokenHash`. */
  mint(claim: SessionClaim, tokenHash: string): string {
    const payload = Buffer.from(
      JSON.stringify({ c: claim.conversationId, p: claim.protocolVersion, n: randomBytes(12).toString("base64url") }),
    ).toString("base64url");
    return `${VERSION}.${payload}.${this.sign(payload, tokenHash)}`;
  }

  /** What the id carries, when this fleet minted it for this token; otherwise undefined (an unknown session). */
  verify(id: string, tokenHash: string): SessionClaim | undefined {
    const [version, payload, sig, ...rest] = id.split(".");
    if (version !== VERSION || !payload || !sig || rest.length) return undefined;
    const want = Buffer.from(this.sign(payload, tokenHash));
    const got = Buffer.from(sig);
    if (want.length !== got.length || !timingSafeEqual(want, got)) return undefined;
    try {
      const { c, p } = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { c?: unknown; p?: unknown };
      return typeof c === "string" && typeof p === "string" ? { conversationId: c, protocolVersion: p } : undefined;
    } catch {
      return undefined;
    }
  }

  private sign(payload: string, tokenHash: string): string {
    return createHmac("sha256", this.key).update(`${VERSION}.${payload}.${tokenHash}`).digest("base64url");
  }
}
