/**
 * A Codex seat's session as reconcile reads it: the thread's client messages since a time and what
 * still waits in Codex's queue, each with its client id, over the pane's own app-server (never the
 * shared daemon on Windows). `complete` only when both lists were read in full.
 */
import { contentFingerprint } from "../../../shared/fingerprint.js";
import { SeatStatus } from "../../../shared/verdicts.js";
import type { SeatRecord, SessionRead } from "../adapter.js";
import { codexControlOf } from "./control.js";
import { statusOf, type Connected } from "./inspection.js";
import { listClientMessages, listQueue, observeThread } from "./thread.js";

export async function readCodexSession(
  connect: (endpoint: string) => Promise<Connected>,
  seat: SeatRecord,
  sinceMs: number,
): Promise<SessionRead> {
  const ctl = codexControlOf(seat);
  const gap = (status: SeatStatus): SessionRead => ({
    occupantId: seat.occupantId,
    status,
    entries: [],
    complete: false,
  });
  if (!ctl?.endpoint || !ctl.threadId) return gap(SeatStatus.Unknown);
  // Windows reads only a private app-server: never the shared daemon.
  if (ctl.windows && ctl.windows.kind !== "private_app_server") return gap(SeatStatus.Unknown);
  const c = await connect(ctl.endpoint);
  if (!c.ok || c.codexHome !== ctl.codexHome) return gap(SeatStatus.Offline);
  const obs = await observeThread(c.connection, ctl.threadId);
  const msgs = await listClientMessages(c.connection, ctl.threadId, 50);
  const queued = await listQueue(c.connection, ctl.threadId);
  const entries = [
    ...(msgs.ok
      ? msgs.value.messages
          .filter((m) => m.atMs >= sinceMs)
          .map((m) => ({
            deliveryId: m.clientId,
            nativeReceiptId: `${ctl.threadId}/${m.turnId}/${m.itemId}`,
            contentFingerprint: contentFingerprint(m.text),
            atMs: m.atMs,
          }))
      : []),
    // Still waiting in Codex's queue: accepted by the seat, not yet run.
    ...(queued.ok
      ? queued.value.map((q) => ({
          deliveryId: q.clientId,
          nativeReceiptId: `${ctl.threadId}/queue/${q.queuedId}`,
          contentFingerprint: contentFingerprint(q.text),
          atMs: Date.now(),
        }))
      : []),
  ];
  return {
    occupantId: seat.occupantId,
    status: obs.ok ? statusOf(obs.value) : SeatStatus.Unknown,
    entries,
    complete: msgs.ok && msgs.value.complete && queued.ok,
  };
}
