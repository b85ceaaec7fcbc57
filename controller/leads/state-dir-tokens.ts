/**
 * At start a replica binds its state directory to the fleet's tokens (issue 34 item 3, ADR 0037).
 * The owner token and global-default's lead token are the fleet's (leads/fleet-secrets.ts): the
 * first replica on a database contributes its state directory's, every later replica adopts them
 * and writes them into its own state directory for the local CLI. A start never replaces a live
 * token (it used to restore lead.token into the journal at every start, which disabled the token
 * of every other replica).
 */
import { eq, sql } from "drizzle-orm";
import { conversations } from "../db/schema.js";
import type { Db } from "../db/open.js";
import type { Logger } from "../../shared/logger.js";
import { tokenHash } from "../../shared/tokens.js";
import { storeOwnerToken, type StateFiles } from "../state-dir.js";
import { DEFAULT_CONVERSATION, isLiveTokenHash } from "./conversations.js";
import { DEFAULT_LEAD_TOKEN, OWNER_TOKEN, type FleetSecrets } from "./fleet-secrets.js";
import { leadTokenPath, storeLeadToken } from "./token-files.js";

export interface FleetTokens {
  ownerToken: string;
  /** global-default's token; this state directory's own when the fleet's could not be known (see below). */
  leadToken: string;
}

export async function bindStateDirTokens(
  db: Db,
  secrets: FleetSecrets,
  state: StateFiles,
  logger: Logger,
): Promise<FleetTokens> {
  const decided = await db.transaction(async (tx) => {
    // Two first starts on a fresh database agree on one pair: one replica decides at a time.
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext('clankie:state-dir-tokens'))`);
    const ownerToken = await secrets.adopt(OWNER_TOKEN, () => state.ownerToken, tx);
    const [row] = await tx
      .select({ tokenHash: conversations.tokenHash })
      .from(conversations)
      .where(eq(conversations.id, DEFAULT_CONVERSATION))
      .for("update");
    const live = isLiveTokenHash(row?.tokenHash) ? row!.tokenHash : undefined;
    const copy = await secrets.read(DEFAULT_LEAD_TOKEN, tx);
    if (copy !== undefined && live === tokenHash(copy)) return { ownerToken, leadToken: copy };
    const mine = tokenHash(state.leadToken);
    if (live === undefined) {
      await tx
        .insert(conversations)
        .values({ id: DEFAULT_CONVERSATION, tokenHash: mine })
        .onConflictDoUpdate({ target: conversations.id, set: { tokenHash: mine } });
    }
    if (live === undefined || live === mine) {
      await secrets.publish(DEFAULT_LEAD_TOKEN, state.leadToken, tx);
      return { ownerToken, leadToken: state.leadToken };
    }
    // A fleet from before ADR 0037 keeps only the live token's hash: its value is in some other
    // replica's state directory. It stays live; that replica publishes it when it starts.
    return { ownerToken, leadToken: undefined };
  });
  if (decided.ownerToken !== state.ownerToken) {
    const file = storeOwnerToken(state.dir, decided.ownerToken);
    logger.warn(
      "this state directory's owner token was not the fleet's: it now holds the fleet's (valid on every replica)",
      { file },
    );
  }
  if (decided.leadToken === undefined) {
    logger.warn(
      `${DEFAULT_CONVERSATION}'s live lead token is another replica's and the fleet holds no copy of it yet (a fleet from before ADR 0037): ` +
        `it was kept, so this state directory's lead.token does not work. Start the replica whose lead.token works, ` +
        `or rotate it: clankie lead token --conversation ${DEFAULT_CONVERSATION}`,
      { file: leadTokenPath(state.dir, DEFAULT_CONVERSATION) },
    );
    return { ownerToken: decided.ownerToken, leadToken: state.leadToken };
  }
  if (decided.leadToken !== state.leadToken) {
    const file = storeLeadToken(state.dir, DEFAULT_CONVERSATION, decided.leadToken);
    logger.warn(
      "this state directory's lead token was not the fleet's: it now holds the fleet's (valid on every replica)",
      { file },
    );
  }
  return { ownerToken: decided.ownerToken, leadToken: decided.leadToken };
}
