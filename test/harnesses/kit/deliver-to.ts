/**
 * Runs one message through the agent's real delivery pipeline (inspect → explicit-mode check
 * → freshness gate → write) to a single seat, as the controller's Deliver call would. Proofs
 * are stamped on a frozen clock (give the adapter `frozenClock` too): the 250 ms gate has its
 * own tests, and machine load must never decide a harness test.
 */
import { deliver, type DeliverVerdict } from "../../../node-agent/deliver/deliver.js";
import type { HarnessAdapter, NativeWrite, SeatRecord } from "../../../node-agent/harnesses/adapter.js";
import { AdapterRegistry } from "../../../node-agent/harnesses/registry.js";
import type { MonotonicClock } from "../../../node-agent/proofs/proof.js";
import type { SeatBook } from "../../../node-agent/seats/seat-book.js";

export const frozenClock: MonotonicClock = { nowMs: () => 0 };

export function deliverTo(adapter: HarnessAdapter, seat: SeatRecord, message: NativeWrite): Promise<DeliverVerdict> {
  const seats = { get: (name: string) => (name === seat.name ? seat : undefined) } as unknown as SeatBook;
  const clock = frozenClock;
  return deliver(
    { seats, adapters: new AdapterRegistry().register(adapter), clock },
    {
      seatName: seat.name,
      deliveryId: message.deliveryId,
      text: message.text,
      mode: message.mode,
      conversationId: message.conversationId,
      occupantId: seat.occupantId,
      authorityAgeMs: 0,
      arrivedAtMs: clock.nowMs(),
    },
  );
}
