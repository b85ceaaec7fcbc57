/**
 * Rule 39: native idle releases dispatch only after the exact active turn is observed terminal.
 * The unattended release's decision (controller/delivery/idle-release.ts) on what the seat's agent read.
 */
import { describe, expect, it } from "vitest";
import { idleReleases } from "../../../../controller/delivery/idle-release.js";

describe("idle-release.idleReleases", () => {
  it("rule 39: an idle seat whose original's write turn is still active keeps the fence", () => {
    expect(idleReleases({ kind: "absent", status: "idle", writeTurn: "active" })).toBe(false);
  });

  it("rule 39: an idle seat whose write turn the agent cannot name (unknown) keeps the fence", () => {
    expect(idleReleases({ kind: "absent", status: "idle", writeTurn: "unknown" })).toBe(false);
  });

  it("rule 39: the exact write turn observed terminal on an idle seat releases", () => {
    expect(idleReleases({ kind: "absent", status: "idle", writeTurn: "terminal" })).toBe(true);
  });

  it("a harness without turn ids: its idle status decides, as before; busy or unreadable never releases", () => {
    expect(idleReleases({ kind: "absent", status: "idle" })).toBe(true);
    expect(idleReleases({ kind: "absent", status: "working" })).toBe(false);
    expect(idleReleases({ kind: "absent", status: "working", writeTurn: "terminal" })).toBe(false);
    expect(idleReleases({ kind: "unreadable", detail: "read in part" })).toBe(false);
  });
});
