/** The status watch reports the seat list again only when a seat's status, capabilities or occupant changed. */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  CannotWorkSchema,
  SeatSchema,
  SeatStatus,
  InputCapabilitiesSchema,
  type Seat,
} from "../../../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { startSeatStatusWatch } from "../../../../node-agent/seats/seat-status-watch.js";
import { silentLogger } from "../../../../shared/logger.js";

const seat = (status: SeatStatus, modes: number[] = []) =>
  create(SeatSchema, {
    name: "codex-1",
    status,
    occupantId: "o1",
    inputCapabilities: create(InputCapabilitiesSchema, { deliveryModes: modes }),
  });

describe("seat-status-watch.startSeatStatusWatch", () => {
  it("reports a changed status once, and nothing while it stays the same", async () => {
    let now: Seat[] = [seat(SeatStatus.IDLE)];
    const reports: Seat[][] = [];
    const watch = startSeatStatusWatch({
      inspect: async () => now,
      report: async (s) => void reports.push(s),
      intervalMs: 10,
      logger: silentLogger,
    });
    watch.reported(now);
    await new Promise((r) => setTimeout(r, 60));
    expect(reports).toHaveLength(0);
    now = [seat(SeatStatus.WORKING)];
    for (let i = 0; i < 50 && reports.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 60));
    expect(reports.map((r) => r[0]!.status)).toEqual([SeatStatus.WORKING]);
    watch.stop();
  });

  it("a failed inspect or report is tried again on the next tick, never given up", async () => {
    let fail = true;
    const reports: Seat[][] = [];
    const watch = startSeatStatusWatch({
      inspect: async () => {
        if (fail) throw new Error("agent busy");
        return [seat(SeatStatus.IDLE)];
      },
      report: async (s) => void reports.push(s),
      intervalMs: 10,
      logger: silentLogger,
    });
    await new Promise((r) => setTimeout(r, 40));
    fail = false;
    for (let i = 0; i < 50 && reports.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(reports).toHaveLength(1);
    watch.stop();
  });

  it("issue 35: a seat whose harness starts or stops saying it cannot work is reported again", async () => {
    let now: Seat[] = [seat(SeatStatus.IDLE)];
    const reports: Seat[][] = [];
    const watch = startSeatStatusWatch({
      inspect: async () => now,
      report: async (s) => void reports.push(s),
      intervalMs: 10,
      logger: silentLogger,
    });
    watch.reported(now);
    const keyless = seat(SeatStatus.IDLE);
    keyless.cannotWork = create(CannotWorkSchema, { reason: "no_api_key", detail: "Pi has no API key" });
    now = [keyless];
    for (let i = 0; i < 50 && reports.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(reports.map((r) => r[0]!.cannotWork?.reason)).toEqual(["no_api_key"]);
    watch.stop();
  });
});
