/**
 * The durable fence for answers to a worker's question (rules 14 and 39): one claim file per
 * native question (thread, turn, tool call), created exclusively and fsynced BEFORE the answer
 * leaves, then rewritten (temp + fsync + rename) with what the native receipt proved. A claim
 * that never settled, or settled uncertain, refuses every further answer until reconcile:
 * an uncertain answer never authorizes a second one, even across an agent restart.
 */
import { createHash } from "node:crypto";
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { join } from "node:path";

export interface QuestionKey {
  threadId: string;
  turnId: string;
  /** The tool call id of Codex's request_user_input (its `itemId`). */
  itemId: string;
}

export type LedgerState =
  | { state: "sending"; answerJson: string; atMs: number }
  | { state: "delivered"; answerJson: string; atMs: number }
  | {
      state: "unconfirmed";
      reason: "answered_concurrently_by_owner";
      answerJson: string;
      winningOutput?: string;
      atMs: number;
    }
  | { state: "uncertain"; reason: string; answerJson: string; atMs: number }
  | { state: "not_sent"; reason: string; answerJson: string; atMs: number };

export type ClaimOutcome = { ok: true } | { ok: false; existing: LedgerState } | { ok: false; unreadable: string };

function fsyncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export class QuestionLedger {
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  private pathOf(k: QuestionKey): string {
    const h = createHash("sha256").update(`${k.threadId}\0${k.turnId}\0${k.itemId}`).digest("hex").slice(0, 40);
    return join(this.dir, `${h}.json`);
  }

  read(k: QuestionKey): LedgerState | undefined | { unreadable: string } {
    let text: string;
    try {
      text = readFileSync(this.pathOf(k), "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      return { unreadable: (e as Error).message };
    }
    try {
      return JSON.parse(text) as LedgerState;
    } catch {
      // A torn or foreign file cannot prove the answer was not sent: it fences like a claim.
      return { unreadable: "the claim file is not JSON" };
    }
  }

  /** Takes the one claim for this question; a second claim sees the first's state. */
  claim(k: QuestionKey, answerJson: string, nowMs: number): ClaimOutcome {
    const p = this.pathOf(k);
    let fd: number;
    try {
      fd = openSync(p, "wx", 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") return { ok: false, unreadable: (e as Error).message };
      const existing = this.read(k);
      if (existing === undefined) return { ok: false, unreadable: "the claim vanished while read" };
      if ("unreadable" in existing) return { ok: false, unreadable: existing.unreadable };
      // An exact not_sent (the answer never left) releases the claim for a new answer.
      if (existing.state !== "not_sent") return { ok: false, existing };
      this.settle(k, { state: "sending", answerJson, atMs: nowMs });
      return { ok: true };
    }
    try {
      writeSync(fd, JSON.stringify({ state: "sending", answerJson, atMs: nowMs } satisfies LedgerState));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    fsyncDir(this.dir);
    return { ok: true };
  }

  settle(k: QuestionKey, s: LedgerState): void {
    const p = this.pathOf(k);
    const tmp = `${p}.tmp`;
    const fd = openSync(tmp, "w", 0o600);
    try {
      writeSync(fd, JSON.stringify(s));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, p);
    fsyncDir(this.dir);
  }
}
