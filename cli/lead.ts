/**
 * `clankie lead token --conversation C`: mint a bearer token bound to one lead conversation, with
 * the lines that connect a client with it (and say so when it replaces an older one, which stops working).
 * The token is kept in the state directory where `clankie mcp --conversation C` and the controller
 * read it (controller/leads/token-files.ts), so a bridge started later uses it instead of replacing it.
 * `clankie lead revoke --conversation C`: make the conversation's token unusable everywhere.
 */
import { create } from "@bufbuild/protobuf";
import { IssueLeadTokenRequestSchema, RevokeLeadTokenRequestSchema } from "../shared/gen/clankie/fleet/v1/owner_pb.js";
import { InvalidArgumentError } from "../shared/errors.js";
import { ownerClients } from "../shared/owner-client.js";
import { emit, type OutputOptions } from "./output.js";
import { leadConfigLines } from "./lead-config.js";
import { bridgeCommand, leadConfigLines as bridgeConfigLines } from "./lead-configs.js";
import { storeLeadToken } from "../controller/for-cli.js";

export const LEAD_USAGE = "usage: clankie lead token --conversation ID | clankie lead revoke --conversation ID";

/** `bridgeUrls`: every replica's MCP URL, for the bridge lines (ADR 0037); none: the state dir's controller. */
export async function leadToken(
  stateDir: string,
  controller: string | undefined,
  conversation: string | undefined,
  out: OutputOptions,
  bridgeUrls?: string[],
): Promise<void> {
  if (!conversation) throw new InvalidArgumentError(LEAD_USAGE);
  const { owner, url } = ownerClients(stateDir, controller);
  const res = await owner.issueLeadToken(create(IssueLeadTokenRequestSchema, { conversationId: conversation }));
  const tokenFile = storeLeadToken(stateDir, res.conversationId, res.token);
  const mcpUrl = new URL("/mcp", url).toString();
  const lines = leadConfigLines(mcpUrl, res.token);
  const bridge = bridgeCommand(stateDir, undefined, {
    conversation: res.conversationId,
    ...(bridgeUrls ? { urls: bridgeUrls } : {}),
  });
  const shown = { conversationId: res.conversationId, token: res.token, replaced: res.replaced, tokenFile, mcpUrl };
  emit(out, { ...shown, claude: lines.claude, codex: lines.codex, bridge }, () =>
    [
      `conversation ${res.conversationId}`,
      `token        ${res.token}`,
      `stored in    ${tokenFile}   (clankie mcp --conversation ${res.conversationId} uses it)`,
      ...(res.replaced ? ["(this replaces the conversation's previous token, which no longer works)"] : []),
      `MCP          ${mcpUrl}`,
      "",
      `Claude Code:  ${lines.claude}`,
      `Codex:        ${lines.codex}`,
      "",
      `Or through the stdio bridge (it reads the token from ${tokenFile}${bridgeUrls ? `; replicas ${bridgeUrls.join(", ")}` : ""}):`,
      ...bridgeConfigLines(bridge),
    ].join("\n"),
  );
}

export async function leadRevoke(
  stateDir: string,
  controller: string | undefined,
  conversation: string | undefined,
  out: OutputOptions,
): Promise<void> {
  if (!conversation) throw new InvalidArgumentError(LEAD_USAGE);
  const { owner } = ownerClients(stateDir, controller);
  const res = await owner.revokeLeadToken(create(RevokeLeadTokenRequestSchema, { conversationId: conversation }));
  emit(out, { conversationId: res.conversationId, revoked: res.revoked }, () =>
    res.revoked
      ? `conversation ${res.conversationId}: token revoked (every controller refuses it within seconds)`
      : `conversation ${res.conversationId} had no live token; nothing changed`,
  );
}
