/**
 * The one place a state directory keeps each lead conversation's token, read and written by
 * `clankie lead token`, `clankie mcp` and the controller (`clankie controller|up`) alike (issue 32,
 * item 5). global-default's is `<state>/lead.token`, which the controller binds at every start;
 * any other conversation's is `<state>/leads/<id>.token`. Only this module knows the layout, so
 * moving the tokens elsewhere (the database, for replicas) changes one file.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeFileDurably } from "../../shared/durable-file.js";
import { assertConversationId, DEFAULT_CONVERSATION } from "./conversations.js";

export function leadTokenPath(stateDir: string, conversationId: string): string {
  if (conversationId === DEFAULT_CONVERSATION) return join(stateDir, "lead.token");
  // The id's grammar (no slash, no leading dot) keeps the file inside leads/.
  assertConversationId(conversationId);
  return join(stateDir, "leads", `${conversationId}.token`);
}

/** The stored token, or undefined when this state directory holds none for the conversation. */
export function readLeadToken(stateDir: string, conversationId: string): string | undefined {
  const path = leadTokenPath(stateDir, conversationId);
  if (!existsSync(path)) return undefined;
  return readFileSync(path, "utf8").trim() || undefined;
}

/** Keeps the conversation's current token (mode 0600, crash-safe); returns where. */
export function storeLeadToken(stateDir: string, conversationId: string, token: string): string {
  const path = leadTokenPath(stateDir, conversationId);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileDurably(path, token + "\n");
  return path;
}
