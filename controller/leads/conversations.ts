/**
 * Lead conversations and their bearer tokens. A token is bound to one conversation, and a
 * conversation sees and settles only its own receipts. Only token hashes are stored.
 */
import { eq } from "drizzle-orm";
import { conversations } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { newToken, tokenHash } from "../../shared/tokens.js";
import { InvalidArgumentError } from "../../shared/errors.js";

export const DEFAULT_CONVERSATION = "global-default";
const CONVERSATION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export function assertConversationId(id: string): void {
  if (!CONVERSATION_ID.test(id)) throw new InvalidArgumentError(`conversation id must match ${CONVERSATION_ID.source}`);
}

/** Binds a fresh token to the conversation (replacing its previous token) and returns it. */
export async function issueLeadToken(db: Db, conversationId: string, token = newToken("lead")): Promise<string> {
  assertConversationId(conversationId);
  const hash = tokenHash(token);
  await db.insert(conversations).values({ id: conversationId, tokenHash: hash }).onConflictDoUpdate({ target: conversations.id, set: { tokenHash: hash } });
  return token;
}

export class ConversationAuth {
  private readonly cache = new Map<string, string>();

  constructor(private readonly db: Db) {}

  /** The conversation a token belongs to, or undefined for an unknown token. */
  async conversationFor(token: string | undefined): Promise<string | undefined> {
    if (!token) return undefined;
    const hash = tokenHash(token);
    const cached = this.cache.get(hash);
    if (cached) return cached;
    const [row] = await this.db.select({ id: conversations.id }).from(conversations).where(eq(conversations.tokenHash, hash));
    if (row) this.cache.set(hash, row.id);
    return row?.id;
  }

  forget(): void {
    this.cache.clear();
  }
}
