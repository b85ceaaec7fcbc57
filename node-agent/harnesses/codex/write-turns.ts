/**
 * Rule 39 (issue 35): native idle releases dispatch only after the exact active turn is
 * observed terminal. Each Codex write records, before its request leaves, the turn that was
 * active on the thread (the one a steer joins, or a queued message waits behind), or that none
 * was. The unattended release asks for it by delivery id: the seat reading idle is not enough,
 * that exact turn must read completed, interrupted or failed. Kept in memory (bounded): after an
 * agent restart the turn is unknown, and unknown never releases.
 */
import type { WriteTurnState } from "../adapter.js";
import type { CodexConnection } from "./connection.js";

const MAX_RECORDS = 1000;

export class CodexWriteTurns {
  private readonly byDelivery = new Map<string, { threadId: string; turnId: string | null }>();

  /** Before the write's request leaves: the turn active now, or null for an idle thread. */
  record(deliveryId: string, threadId: string, turnId: string | undefined): void {
    if (this.byDelivery.size >= MAX_RECORDS) this.byDelivery.delete(this.byDelivery.keys().next().value!);
    this.byDelivery.set(deliveryId.toLowerCase(), { threadId, turnId: turnId ?? null });
  }

  /** The exact turn's state now, read from the thread's own turn list. */
  async observe(conn: CodexConnection, threadId: string, deliveryId: string): Promise<WriteTurnState> {
    const rec = this.byDelivery.get(deliveryId.toLowerCase());
    if (!rec || rec.threadId !== threadId) return "unknown";
    // No turn was active at the write: none can still hold the message back.
    if (rec.turnId === null) return "terminal";
    return observeTurn(conn, threadId, rec.turnId);
  }
}

/** One turn's state from `thread/turns/list` (newest 50): in progress is active; completed, interrupted, failed are terminal. */
export async function observeTurn(conn: CodexConnection, threadId: string, turnId: string): Promise<WriteTurnState> {
  const r = await conn.call<{ data?: { id?: unknown; status?: unknown }[] }>("thread/turns/list", {
    threadId,
    limit: 50,
  });
  if (!r.ok || !Array.isArray(r.result?.data)) return "unknown";
  const turn = r.result.data.find((t) => t.id === turnId);
  if (!turn) return "unknown";
  if (turn.status === "inProgress") return "active";
  return turn.status === "completed" || turn.status === "interrupted" || turn.status === "failed"
    ? "terminal"
    : "unknown";
}
