/**
 * The controller's state directory: the embedded database, the owner token (mode 0600), the default lead token, and controller.json, which tells the CLI where the
 * running controller listens. Where lead tokens are kept is leads/token-files.ts's. The tokens here are copies of
 * the fleet's (leads/state-dir-tokens.ts): the first replica's become the fleet's, later replicas' are replaced by them.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import {
  type ControllerRecord,
  controllerRecordPath,
  ownerTokenPath,
  readControllerRecord,
  readOwnerToken,
} from "../shared/controller-record.js";
import { writeFileDurably } from "../shared/durable-file.js";
import { newToken } from "../shared/tokens.js";
import { DEFAULT_CONVERSATION } from "./leads/conversations.js";
import { leadTokenPath } from "./leads/token-files.js";

export interface StateFiles {
  dir: string;
  dataDir: string;
  agentDir: string;
  ownerToken: string;
  leadToken: string;
}

// The record and the owner token are read by the CLI and the bridge too, so their format is shared/'s.
export { type ControllerRecord, readControllerRecord };

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.CLANKIE_STATE_DIR ?? join(homedir(), ".clankie"));
}

function tokenFile(path: string, prefix: string): string {
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  const token = newToken(prefix);
  writeFileDurably(path, token + "\n");
  return token;
}

export function openStateDir(dir: string): StateFiles {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return {
    dir,
    dataDir: join(dir, "pgdata"),
    agentDir: join(dir, "agent"),
    ownerToken: tokenFile(ownerTokenPath(dir), "owner"),
    leadToken: tokenFile(leadTokenPath(dir, DEFAULT_CONVERSATION), "lead"),
  };
}

/** Keeps the fleet's owner token in this state directory (mode 0600, crash-safe); returns where. */
export function storeOwnerToken(dir: string, token: string): string {
  const path = ownerTokenPath(dir);
  writeFileDurably(path, token + "\n");
  return path;
}

export function readToken(dir: string, name: "owner" | "lead"): string | undefined {
  if (name === "owner") return readOwnerToken(dir);
  const path = leadTokenPath(dir, DEFAULT_CONVERSATION);
  return existsSync(path) ? readFileSync(path, "utf8").trim() : undefined;
}

export function writeControllerRecord(dir: string, record: ControllerRecord): void {
  writeFileDurably(controllerRecordPath(dir), JSON.stringify(record, null, 2) + "\n");
}

export function removeControllerRecord(dir: string, pid: number): void {
  const rec = readControllerRecord(dir);
  if (rec?.pid === pid) rmSync(controllerRecordPath(dir), { force: true });
}
