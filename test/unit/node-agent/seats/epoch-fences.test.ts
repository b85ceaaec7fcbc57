/**
 * ADR 0043: the agent's fence on a controller epoch. It is granted only while the instance has no live
 * link here, it names the seats a Deliver of the epoch is still in flight to (counted from the call's
 * arrival, before the seat's lock), it refuses every later Deliver of that epoch or an older one, and it
 * survives a restart of the agent.
 */
import { join } from "node:path";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { EpochFences } from "../../../../node-agent/seats/epoch-fences.js";

const session = () => ({ closed: false, destroyed: false });

describe("EpochFences.fence", () => {
  it("refuses to fence an instance that still has a live link here: its turns are not taken over", () => {
    const f = new EpochFences();
    const link = session();
    const call = f.begin("inbox", "ctl-a", 7, link);
    if (call) call.done();
    expect(f.fence("ctl-a", 7)).toEqual({ fenced: false, inFlightSeats: [] });
    expect(f.isFenced("ctl-a", 7)).toBe(false);
  });

  it("once the link closed: fences the epoch and every older one, and names the seats still in flight", () => {
    const f = new EpochFences();
    const link = session();
    const busy = f.begin("inbox", "ctl-a", 7, link);
    const done = f.begin("other", "ctl-a", 7, link);
    if (!busy || !done) throw new Error("not fenced yet");
    done.done();
    link.closed = true;
    expect(f.fence("ctl-a", 7)).toEqual({ fenced: true, inFlightSeats: ["inbox"] });
    busy.done();
    expect(f.fence("ctl-a", 7)).toEqual({ fenced: true, inFlightSeats: [] });
    expect(f.isFenced("ctl-a", 6)).toBe(true);
    expect(f.isFenced("ctl-a", 8)).toBe(false);
    expect(f.isFenced("ctl-b", 7)).toBe(false);
  });

  it("refuses every later Deliver of a fenced epoch (a paused or partitioned replica that comes back)", () => {
    const f = new EpochFences();
    expect(f.fence("ctl-a", 7).fenced).toBe(true);
    expect(f.begin("inbox", "ctl-a", 7, session())).toBe(false);
    expect(f.begin("inbox", "ctl-a", 5, session())).toBe(false);
    // Its next epoch, and calls that name no instance (older controllers), are not fenced.
    expect(f.begin("inbox", "ctl-a", 8, session())).not.toBe(false);
    expect(f.begin("inbox", "", 0, undefined)).not.toBe(false);
  });

  it("keeps its fences across a restart of the agent", () => {
    const file = join(mkdtempSync(join(tmpdir(), "epoch-fences-")), "epoch-fences.json");
    expect(new EpochFences(file).fence("ctl-a", 9).fenced).toBe(true);
    const again = new EpochFences(file);
    expect(again.begin("inbox", "ctl-a", 9, session())).toBe(false);
    expect(again.isFenced("ctl-a", 10)).toBe(false);
  });
});
