/**
 * ADR 0036: the instance lease and its renewal are configuration with documented defaults (a 10 s
 * lease renewed every 2 s), and a lease that a single slow renewal could lose is refused at start.
 */
import { describe, expect, it } from "vitest";
import { compileControllerConfig } from "../../../../controller/config.js";
import { InvalidArgumentError } from "../../../../shared/errors.js";

describe("issue 34 item 1: the instance lease's configuration", () => {
  it("defaults to a 10 s lease renewed every 2 s", () => {
    const c = compileControllerConfig({ stateDir: "/tmp/x" });
    expect([c.instanceLeaseMs, c.instanceRenewMs]).toEqual([10_000, 2_000]);
  });

  it("a shorter lease is renewed at a third of it unless told otherwise", () => {
    const c = compileControllerConfig({ stateDir: "/tmp/x", instanceLeaseMs: 3_000 });
    expect([c.instanceLeaseMs, c.instanceRenewMs]).toEqual([3_000, 1_000]);
  });

  it("a lease shorter than two renewals is refused: one slow renewal would lose it", () => {
    expect(() =>
      compileControllerConfig({ stateDir: "/tmp/x", instanceLeaseMs: 3_000, instanceRenewMs: 2_000 }),
    ).toThrow(InvalidArgumentError);
  });
});
