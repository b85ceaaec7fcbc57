/**
 * Names and ids (shared/ids.ts, controller/leads/conversations.ts): a refused name says in words
 * what a name may hold and echoes the value as JSON (so control characters stay visible), never
 * a raw regular expression a newcomer has to decode.
 */
import { describe, expect, it } from "vitest";
import { assertValidName, isValidName, parseSeatId } from "../../../shared/ids.js";
import { assertConversationId } from "../../../controller/leads/conversations.js";

describe("seat and machine names", () => {
  it("accepts letters, digits, dot, dash and underscore up to 64, starting with a letter or digit", () => {
    expect(isValidName("m1")).toBe(true);
    expect(isValidName("a".repeat(64))).toBe(true);
    expect(isValidName("a".repeat(65))).toBe(false);
    expect(isValidName("-x")).toBe(false);
    expect(parseSeatId("m1/inbox")).toEqual({ machine: "m1", name: "inbox" });
    expect(parseSeatId("m1/in box")).toBeUndefined();
  });

  it("a refused name is explained in words, with the value quoted, and no regex source", () => {
    expect(() => assertValidName("seat name", "in\u001bbox")).toThrow(/^seat name must be 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit; got "in\\u001bbox"$/);
    try {
      assertValidName("machine name", "bad name");
    } catch (e) {
      expect((e as Error).message).not.toMatch(/\^\[|\]\{0,/);
    }
  });

  it("a refused conversation id is explained in words too", () => {
    expect(() => assertConversationId("no spaces")).toThrow(/conversation id must be 1 to 128 letters, digits, dots, colons, dashes or underscores.*got "no spaces"/);
  });
});
