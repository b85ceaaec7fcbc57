/**
 * Issue 32 item 3: the front door's limits are set by flags. Each flag reaches the limit it names,
 * the rest keep their defaults, and a bad value is refused with the flag's name.
 */
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { addFrontDoorOptions, frontDoorFlagsOf, frontDoorLimits } from "../../../cli/front-door-flags.js";
import { DEFAULT_LISTENER_LIMITS } from "../../../controller/for-cli.js";

function parse(args: string[]) {
  const cmd = addFrontDoorOptions(new Command("controller").exitOverride());
  cmd.parse(args, { from: "user" });
  return frontDoorLimits(frontDoorFlagsOf(cmd.opts()));
}

describe("front-door flags (issue 32 item 3)", () => {
  it("--abuse-hold-ms sets the HTTP/2 abuse hold and keeps the other HTTP/2 limits", () => {
    const { listenerLimits } = parse(["--abuse-hold-ms", "2500"]);
    expect(listenerLimits.h2).toEqual({ ...DEFAULT_LISTENER_LIMITS.h2, abuseHoldMs: 2500 });
  });

  it("every flag reaches its limit", () => {
    const { listenerLimits, unauthenticatedLimits } = parse([
      "--max-connections",
      "100",
      "--max-connections-per-peer",
      "10",
      "--max-unproven-per-peer",
      "5",
      "--headers-timeout-ms",
      "3000",
      "--max-watch-streams",
      "7",
      "--max-watch-streams-per-peer",
      "3",
      "--unauthenticated-rate",
      "4",
    ]);
    expect(listenerLimits).toMatchObject({
      maxConnections: 100,
      maxConnectionsPerPeer: 10,
      maxUnprovenPerPeer: 5,
      headersTimeoutMs: 3000,
    });
    expect(unauthenticatedLimits).toEqual({
      watchesTotal: 7,
      watchesPerPeer: 3,
      callsPerPeerPerSecond: 4,
      callBurstPerPeer: 8,
    });
  });

  it("a value that is not a whole number of at least 1 is refused, naming the flag", () => {
    expect(() => parse(["--abuse-hold-ms", "soon"])).toThrow(/--abuse-hold-ms takes a whole number/);
  });
});
