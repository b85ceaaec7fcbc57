/**
 * Issue 37 item 6: the dashboard says how long ago a machine was seen as an operator reads it. A
 * machine gone for two weeks reads "14 d ago", not "336.0 h ago".
 */
import { describe, expect, it } from "vitest";
// @ts-expect-error: the dashboard's browser modules are plain JavaScript without type declarations.
import { age } from "../../../../controller/dashboard/common.js";

describe("dashboard ages", () => {
  it("reads seconds, minutes, hours, then whole days past two days", () => {
    expect(age(12_300)).toBe("12.3 s");
    expect(age(90_000)).toBe("1.5 min");
    expect(age(5 * 3_600_000)).toBe("5.0 h");
    expect(age(47 * 3_600_000)).toBe("47.0 h");
    expect(age(48 * 3_600_000)).toBe("2 d");
    expect(age(336 * 3_600_000)).toBe("14 d");
  });
});
