/**
 * The one exclusive claim per pane (rule 48): before a worker's message leaves, its id, text
 * fingerprint and binding are written durably to a claim file created exclusively (O_EXCL),
 * so a second message from the same pane cannot go out while the first is unresolved, across
 * tool calls and process restarts alike. Settling (stored, or a definite not_sent) removes it.
 */
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, rmSync, writeSync, fsyncSync } from "node:fs";
import { join } from "node:path";
import { contentFingerprint } from "../shared/fingerprint.js";
import { isValidName } from "../shared/ids.js";

export interface Claim {
  schemaVersion: 1;
  deliveryId: string;
  seatId: string;
  binding: string;
  fingerprint: string;
  text: string;
  claimedAtMs: number;
}

export type ClaimRead = { kind: "none" } | { kind: "held"; claim: Claim } | { kind: "unreadable"; detail: string };

export class PaneClaims {
  constructor(private readonly dir: string) {}

  private path(seatName: string): string {
    if (!isValidName(seatName)) throw new Error(`not a seat name: ${seatName}`);
    return join(this.dir, `${seatName}.json`);
  }

  read(seatName: string): ClaimRead {
    const p = this.path(seatName);
    if (!existsSync(p)) return { kind: "none" };
    try {
      const c = JSON.parse(readFileSync(p, "utf8")) as Claim;
      if (c.schemaVersion !== 1 || typeof c.deliveryId !== "string") throw new Error("not a claim");
      return { kind: "held", claim: c };
    } catch (e) {
      // An unreadable claim cannot tell the original from a new message: it refuses everything (rule 16).
      return { kind: "unreadable", detail: `${p}: ${(e as Error).message}` };
    }
  }

  /** Takes the pane's claim; false when one is already held. Durable before it returns. */
  take(seatName: string, c: Omit<Claim, "schemaVersion" | "fingerprint" | "claimedAtMs">): Claim | false {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const claim: Claim = { schemaVersion: 1, ...c, fingerprint: contentFingerprint(c.text), claimedAtMs: Date.now() };
    let fd: number;
    try {
      fd = openSync(this.path(seatName), "wx", 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw e;
    }
    try {
      writeSync(fd, JSON.stringify(claim));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    const dirFd = openSync(this.dir, "r");
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
    return claim;
  }

  /** Releases the claim, only if it is still this delivery's. */
  release(seatName: string, deliveryId: string): void {
    const held = this.read(seatName);
    if (held.kind === "held" && held.claim.deliveryId === deliveryId) rmSync(this.path(seatName), { force: true });
  }
}
