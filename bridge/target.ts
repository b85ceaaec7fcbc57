/**
 * Where `clankie mcp` connects and with which lead token. Both are read again for every new
 * client generation, so a controller restarted on another port (controller.json) or a
 * rotated token file is picked up without restarting the lead's harness. With several URLs
 * (replicas of one fleet, ADR 0037) the target points at one at a time and moves to the next
 * when that one fails; any replica accepts the fleet's token and sessions.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { create } from "@bufbuild/protobuf";
import { IssueLeadTokenRequestSchema } from "../shared/gen/clankie/fleet/v1/owner_pb.js";
import { FleetError, ErrorCode, InvalidArgumentError } from "../shared/errors.js";
import { readControllerRecord } from "../shared/controller-record.js";
import {
  defaultStateDir,
  leadTokenPath,
  readLeadToken,
  storeLeadToken,
  assertConversationId,
  DEFAULT_CONVERSATION,
} from "../controller/for-cli.js";
import { isProcessAlive } from "../shared/process-alive.js";
import { ownerClients } from "../shared/owner-client.js";
import { quoteInput } from "../shared/public-text.js";

/** The fleet CA certificate the controller writes into its state directory (controller/main.ts). */
export const FLEET_CA_FILE = "fleet-ca.pem";

export interface BridgeFlags {
  stateDir: string;
  /** The controllers' MCP URLs (`--url`, repeated or comma-separated); none: the state dir's controller. */
  urls?: string[] | undefined;
  tokenFile?: string | undefined;
  conversation?: string | undefined;
}

export interface BridgeTarget {
  /** The MCP URL and bearer token to use for a new session, and the fleet CA to trust when it is https. */
  resolve(): { url: URL; token: string; ca?: string | undefined };
  /** For logs: where it points, never the token. */
  describe(): string;
  /** How many URLs it can point at (1 without --url). */
  readonly urlCount: number;
  /** Points at the next URL (round robin); false when there is no other. */
  failover(): boolean;
  /** The --url it points at now (undefined without --url). */
  currentUrl(): string | undefined;
  /**
   * Whether a controller for this state dir is on its way (issue 37 item 5): a controller.json
   * whose process is alive (up, not listening yet), or the embedded database's lock held by a live
   * process (an `up` still opening its journal). With --url there is no telling: false.
   */
  controllerStarting(): boolean;
  /** What to tell the lead when the controller answers the token with 401: the cause and the fix. */
  tokenRejected(status: number): string;
}

function readTokenFile(path: string): string {
  if (!existsSync(path)) throw new FleetError(ErrorCode.Unauthenticated, `no lead token file at ${path}`);
  const token = readFileSync(path, "utf8").trim();
  if (!token) throw new FleetError(ErrorCode.Unauthenticated, `the lead token file ${path} is empty`);
  return token;
}

/** The command that re-issues the conversation's token into this state directory (the old one stops working). */
export function reissueCommand(stateDir: string, conversationId: string): string {
  const dirFlag = resolve(stateDir) === defaultStateDir() ? "" : ` --state-dir ${resolve(stateDir)}`;
  return `clankie lead token --conversation ${conversationId}${dirFlag}`;
}

/**
 * Mints the conversation's first token and stores it, or refuses: a conversation that already has a
 * live token elsewhere keeps it, since replacing it would disable the lead using it (issue 32, item 5).
 */
async function mintFirstToken(f: BridgeFlags, conversationId: string): Promise<void> {
  const { owner } = ownerClients(f.stateDir, f.urls?.[0] ? new URL(f.urls[0]).origin : undefined);
  try {
    const request = create(IssueLeadTokenRequestSchema, { conversationId, keepLiveToken: true });
    const res = await owner.issueLeadToken(request);
    storeLeadToken(f.stateDir, conversationId, res.token);
  } catch (e) {
    const err = FleetError.from(e);
    if (err.code !== ErrorCode.FailedPrecondition) throw err;
    // A bridge started beside this one for the same conversation may have minted it: it stores it at once.
    for (let i = 0; i < 10; i++) {
      if (readLeadToken(f.stateDir, conversationId) !== undefined) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new FleetError(
      ErrorCode.FailedPrecondition,
      `conversation ${conversationId} already has a live lead token, ` +
        `and ${leadTokenPath(f.stateDir, conversationId)} does not hold it; ` +
        `the bridge will not replace it (that would disable the lead using it). ` +
        `To re-issue it here (the old token stops working): ${reissueCommand(f.stateDir, conversationId)}; ` +
        `or pass --token-file with the live token`,
      { cause: err },
    );
  }
}

/**
 * Resolves flags to a target. Without `--token-file`, the token is the state directory's for the
 * conversation (controller/leads/token-files.ts; global-default's is lead.token). A conversation that has none
 * anywhere gets one minted once with the owner token (the owner is on this machine: the state
 * directory is the controller's).
 */
/** `--url` values as given: each may list several URLs separated by commas. */
export function parseUrls(values: string[] | undefined): string[] | undefined {
  const urls = (values ?? [])
    .flatMap((v) => v.split(","))
    .map((u) => u.trim())
    .filter(Boolean);
  return urls.length ? [...new Set(urls)] : undefined;
}

export async function bridgeTarget(f: BridgeFlags): Promise<BridgeTarget> {
  const conversation = f.tokenFile ? f.conversation : (f.conversation ?? DEFAULT_CONVERSATION);
  if (conversation) assertConversationId(conversation);
  const tokenPath = f.tokenFile ?? leadTokenPath(f.stateDir, conversation!);
  const named = f.tokenFile === undefined && conversation !== DEFAULT_CONVERSATION ? conversation : undefined;
  if (named && readLeadToken(f.stateDir, named) === undefined) await mintFirstToken(f, named);
  const urls = f.urls?.length ? f.urls : undefined;
  for (const url of urls ?? []) {
    try {
      new URL(url);
    } catch {
      throw new InvalidArgumentError(`--url is not a URL: ${quoteInput(url)}`);
    }
  }
  readTokenFile(tokenPath);
  let at = 0;
  return {
    urlCount: urls?.length ?? 1,
    currentUrl: () => urls?.[at],
    failover() {
      if (!urls || urls.length < 2) return false;
      at = (at + 1) % urls.length;
      return true;
    },
    resolve() {
      const raw = urls?.[at] ?? readControllerRecord(f.stateDir)?.mcpUrl;
      if (!raw)
        throw new FleetError(
          ErrorCode.AgentUnreachable,
          `no controller is running for ${f.stateDir} (no controller.json); start clankie up or pass --url`,
        );
      const url = new URL(raw);
      // Off loopback the controller listens with TLS under the fleet CA it wrote beside its state (as the owner tools trust it).
      const caFile = join(f.stateDir, FLEET_CA_FILE);
      const ca = url.protocol === "https:" && existsSync(caFile) ? readFileSync(caFile, "utf8") : undefined;
      return { url, token: readTokenFile(tokenPath), ca };
    },
    describe: () => `${urls ? urls.join(", ") : `controller of ${f.stateDir}`} (token ${tokenPath})`,
    controllerStarting() {
      if (urls) return false;
      const record = readControllerRecord(f.stateDir);
      if (record && isProcessAlive(record.pid)) return true;
      // The lock beside the embedded database's directory (state-dir.ts pgdata, data-dir-lock.ts).
      const lock = join(f.stateDir, "pgdata.lock");
      const holder = existsSync(lock) ? Number.parseInt(readFileSync(lock, "utf8"), 10) : NaN;
      return Number.isFinite(holder) && isProcessAlive(holder);
    },
    tokenRejected: (status) =>
      `the controller rejected the lead token in ${tokenPath} (HTTP ${status}, unauthenticated): ` +
      `it was replaced or revoked, so this is not a connectivity problem. ` +
      (conversation && !f.tokenFile
        ? `Re-issue it with: ${reissueCommand(f.stateDir, conversation)} ` +
          `(the bridge reads the new token for its next session)`
        : `Put a live token in ${tokenPath} (clankie lead token --conversation ID prints one)`),
  };
}
