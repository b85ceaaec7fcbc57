/**
 * Where `clankie mcp` connects and with which lead token. Both are read again for every new
 * client generation, so a controller restarted on another port (controller.json) or a
 * rotated token file is picked up without restarting the lead's harness.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { IssueLeadTokenRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { FleetError, ErrorCode, InvalidArgumentError } from "../../shared/errors.js";
import { writeFileDurably } from "../../shared/durable-file.js";
import { readControllerRecord } from "../state-dir.js";
import { isProcessAlive } from "../../shared/process-alive.js";
import { assertConversationId, DEFAULT_CONVERSATION } from "../leads/conversations.js";
import { ownerClients } from "../cli/owner-client.js";

/** The fleet CA certificate the controller writes into its state directory (controller/main.ts). */
export const FLEET_CA_FILE = "fleet-ca.pem";

export interface BridgeFlags {
  stateDir: string;
  url?: string | undefined;
  tokenFile?: string | undefined;
  conversation?: string | undefined;
}

export interface BridgeTarget {
  /** The MCP URL and bearer token to use for a new session, and the fleet CA to trust when it is https. */
  resolve(): { url: URL; token: string; ca?: string | undefined };
  /** For logs: where it points, never the token. */
  describe(): string;
  /**
   * Whether a controller for this state dir is on its way (issue 37 item 5): a controller.json
   * whose process is alive (up, not listening yet), or the embedded database's lock held by a live
   * process (an `up` still opening its journal). With --url there is no telling: false.
   */
  controllerStarting(): boolean;
}

function readTokenFile(path: string): string {
  if (!existsSync(path)) throw new FleetError(ErrorCode.Unauthenticated, `no lead token file at ${path}`);
  const token = readFileSync(path, "utf8").trim();
  if (!token) throw new FleetError(ErrorCode.Unauthenticated, `the lead token file ${path} is empty`);
  return token;
}

/** The token file of a conversation other than the default one: `<state>/leads/<id>.token`. */
export function conversationTokenPath(stateDir: string, conversationId: string): string {
  return join(stateDir, "leads", `${conversationId}.token`);
}

/**
 * Resolves flags to a target. `--conversation C` without `--token-file` uses the state
 * directory's token for C, minting one once with the owner token when it has none (the
 * owner is on this machine: the state directory is the controller's).
 */
export async function bridgeTarget(f: BridgeFlags): Promise<BridgeTarget> {
  let tokenPath: string;
  if (f.tokenFile) tokenPath = f.tokenFile;
  else if (f.conversation && f.conversation !== DEFAULT_CONVERSATION) {
    assertConversationId(f.conversation);
    tokenPath = conversationTokenPath(f.stateDir, f.conversation);
    if (!existsSync(tokenPath)) {
      const { owner } = ownerClients(f.stateDir, f.url ? new URL(f.url).origin : undefined);
      const res = await owner.issueLeadToken(create(IssueLeadTokenRequestSchema, { conversationId: f.conversation }));
      mkdirSync(join(f.stateDir, "leads"), { recursive: true, mode: 0o700 });
      writeFileDurably(tokenPath, res.token + "\n");
    }
  } else tokenPath = join(f.stateDir, "lead.token");
  if (f.url !== undefined) {
    try {
      new URL(f.url);
    } catch {
      throw new InvalidArgumentError(`--url is not a URL: ${JSON.stringify(f.url)}`);
    }
  }
  readTokenFile(tokenPath);
  return {
    resolve() {
      const raw = f.url ?? readControllerRecord(f.stateDir)?.mcpUrl;
      if (!raw) throw new FleetError(ErrorCode.AgentUnreachable, `no controller is running for ${f.stateDir} (no controller.json); start clankie up or pass --url`);
      const url = new URL(raw);
      // Off loopback the controller listens with TLS under the fleet CA it wrote beside its state (as the owner tools trust it).
      const caFile = join(f.stateDir, FLEET_CA_FILE);
      const ca = url.protocol === "https:" && existsSync(caFile) ? readFileSync(caFile, "utf8") : undefined;
      return { url, token: readTokenFile(tokenPath), ca };
    },
    describe: () => `${f.url ?? `controller of ${f.stateDir}`} (token ${tokenPath})`,
    controllerStarting() {
      if (f.url !== undefined) return false;
      const record = readControllerRecord(f.stateDir);
      if (record && isProcessAlive(record.pid)) return true;
      // The lock beside the embedded database's directory (state-dir.ts pgdata, data-dir-lock.ts).
      const lock = join(f.stateDir, "pgdata.lock");
      const holder = existsSync(lock) ? Number.parseInt(readFileSync(lock, "utf8"), 10) : NaN;
      return Number.isFinite(holder) && isProcessAlive(holder);
    },
  };
}
