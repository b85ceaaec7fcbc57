/**
 * Lead conversations and their bearer tokens. A token is bound to one conversation, and a
 * conversation sees and settles only its own receipts. Only token hashes are stored.
 * A replica remembers a token's conversation for at most TOKEN_CACHE_MS, so a token
 * replaced or revoked through any replica stops working on every replica within that time.
 */
import { randomBytes } from "node:crypto";
import { and, eq, not, like } from "drizzle-orm";
import { conversations } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { newToken, tokenHash } from "../../shared/tokens.js";
import { ErrorCode, FleetError, InvalidArgumentError } from "../../shared/errors.js";
import { quoteInput } from "../../shared/public-text.js";
import { DEFAULT_LEAD_TOKEN, type FleetSecrets } from "./fleet-secrets.js";

export const DEFAULT_CONVERSATION = "global-default";
const CONVERSATION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export function assertConversationId(id: string): void {
  if (!CONVERSATION_ID.test(id))
    throw new InvalidArgumentError(
      `conversation id must be 1 to 128 letters, digits, dots, colons, dashes or underscores, starting with a letter or digit; got ${quoteInput(id)}`,
    );
}

/** How long a replica may go on accepting a token after it was replaced or revoked elsewhere. */
export const TOKEN_CACHE_MS = 2_000;
// A revoked conversation keeps its row (its receipts name it) with a hash no token has.
const REVOKED = "revoked:";

/** Whether a conversation row's hash is some token's (not revoked, not empty). */
export function isLiveTokenHash(hash: string | null | undefined): hash is string {
  return typeof hash === "string" && !hash.startsWith(REVOKED);
}

/**
 * Binds a fresh token to the conversation and returns it; `replaced` when an older live token stopped working.
 * With `keepLive`, a conversation whose token is live keeps it and the call fails: whoever holds that token
 * is not disabled behind its back (issue 32, item 5). global-default's token is also the fleet's copy
 * (leads/fleet-secrets.ts), replaced in the same transaction so a replica starting meanwhile adopts the new one.
 */
export async function issueLeadToken(
  db: Db,
  conversationId: string,
  token = newToken("lead"),
  keepLive = false,
  secrets?: FleetSecrets,
): Promise<{ token: string; replaced: boolean }> {
  assertConversationId(conversationId);
  const hash = tokenHash(token);
  return db.transaction(async (tx) => {
    const [before] = await tx
      .select({ tokenHash: conversations.tokenHash })
      .from(conversations)
      .where(eq(conversations.id, conversationId))
      .for("update");
    const old = before?.tokenHash;
    const live = isLiveTokenHash(old) && old !== hash;
    if (live && keepLive) {
      const kept =
        `conversation ${conversationId} already has a live lead token; it was kept ` +
        "(issuing one would disable the lead using it)";
      throw new FleetError(ErrorCode.FailedPrecondition, kept);
    }
    await tx
      .insert(conversations)
      .values({ id: conversationId, tokenHash: hash })
      .onConflictDoUpdate({ target: conversations.id, set: { tokenHash: hash } });
    if (conversationId === DEFAULT_CONVERSATION && secrets) await secrets.publish(DEFAULT_LEAD_TOKEN, token, tx);
    return { token, replaced: live };
  });
}

/** Makes the conversation's token unusable; false when it had no live token. */
export async function revokeLeadToken(db: Db, conversationId: string): Promise<boolean> {
  assertConversationId(conversationId);
  if (conversationId === DEFAULT_CONVERSATION) {
    throw new InvalidArgumentError(
      `${DEFAULT_CONVERSATION}'s token is the fleet's, copied into every state directory's lead.token: ` +
        `to rotate it, run clankie lead token --conversation ${DEFAULT_CONVERSATION} (it rewrites this state directory's lead.token; ` +
        `the other replicas' copies are rewritten at their next start)`,
    );
  }
  const rows = await db
    .update(conversations)
    .set({ tokenHash: `${REVOKED}${randomBytes(16).toString("hex")}` })
    .where(and(eq(conversations.id, conversationId), not(like(conversations.tokenHash, `${REVOKED}%`))))
    .returning({ id: conversations.id });
  return rows.length > 0;
}

export class ConversationAuth {
  private readonly cache = new Map<string, { id: string; until: number }>();

  constructor(
    private readonly db: Db,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The conversation a token belongs to, or undefined for an unknown, replaced or revoked token. */
  async conversationFor(token: string | undefined): Promise<string | undefined> {
    if (!token) return undefined;
    const hash = tokenHash(token);
    const cached = this.cache.get(hash);
    if (cached && cached.until > this.now()) return cached.id;
    this.cache.delete(hash);
    // A plain read: on PostgreSQL it meets the journal's answer deadline (db/bounded-statements.ts).
    const [row] = await this.db
      .select({ id: conversations.id })
      .from(conversations)
      .where(eq(conversations.tokenHash, hash))
      .execute();
    if (row) this.cache.set(hash, { id: row.id, until: this.now() + TOKEN_CACHE_MS });
    return row?.id;
  }

  forget(): void {
    this.cache.clear();
  }
}
