/**
 * Rule 39's decision on a real harness's session read: what the unattended release
 * (controller/delivery/idle-release.ts) would decide on a full read that lacks the original, given
 * the status and write turn the agent's ReadSession reported (agent-service.ts passes the
 * adapter's readSession through unchanged). STATUS overrides the read's status, to ask what a seat
 * read idle between two moments would decide while the turn is still active.
 */
import { idleReleases } from "../../../controller/delivery/idle-release.js";
import { expect } from "vitest";
import type { HarnessAdapter, SeatRecord, SessionRead } from "../../../node-agent/harnesses/adapter.js";
import { until } from "../../kit/until.js";

export function idleReleaseOn(read: SessionRead, status = read.status): boolean {
  return idleReleases({ kind: "absent", status, ...(read.writeTurn ? { writeTurn: read.writeTurn } : {}) });
}

/** Waits until the seat reads idle and the write's turn terminal, then the unattended release would go ahead. */
export async function untilIdleReleases(adapter: HarnessAdapter, seat: SeatRecord, deliveryId: string): Promise<void> {
  const done = await until(async () => {
    const r = await adapter.readSession(seat, 0, deliveryId);
    return r.status === "idle" && r.writeTurn === "terminal" && r;
  }, "the seat reads idle and the write's turn terminal after the model finished");
  expect(done.complete).toBe(true);
  expect(idleReleaseOn(done)).toBe(true);
}
