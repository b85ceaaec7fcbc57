/**
 * What a running controller leaves in its state directory for the programs beside it (the CLI, the
 * lead's bridge): controller.json, saying where it listens, and the owner token. The controller
 * writes both (controller/state-dir.ts); the others only read them.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface ControllerRecord {
  pid: number;
  url: string;
  mcpUrl: string;
  statusUrl: string;
  /** The https address agents dial (mutual TLS). */
  agentUrl?: string;
  database: string;
  startedAt: string;
}

export const controllerRecordPath = (dir: string) => join(dir, "controller.json");
export const ownerTokenPath = (dir: string) => join(dir, "owner.token");

export function readControllerRecord(dir: string): ControllerRecord | undefined {
  const path = controllerRecordPath(dir);
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, "utf8")) as ControllerRecord;
  } catch {
    return undefined;
  }
}

export function readOwnerToken(dir: string): string | undefined {
  const path = ownerTokenPath(dir);
  return existsSync(path) ? readFileSync(path, "utf8").trim() : undefined;
}
