/**
 * Names and ids (shared/ids.ts, controller/leads/conversations.ts): a refused name says in words
 * what a name may hold and echoes the value as JSON (so control characters stay visible), never
 * a raw regular expression a newcomer has to decode; ids are canonical (issue 32 items 4 and 7).
 */
import { describe, expect, it } from "vitest";
import {
  assertSeatRef,
  assertValidName,
  canonicalRef,
  canonicalUuid,
  isValidName,
  parseSeatId,
  parseUuid,
} from "../../../shared/ids.js";
import { quoteInput } from "../../../shared/public-text.js";
import {
  assertJournalText,
  assertWellFormedText,
  InvalidTextError,
  isWellFormedText,
} from "../../../shared/well-formed-text.js";
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
    expect(() => assertValidName("seat name", "in\u001bbox")).toThrow(
      /^seat name must be 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit; got "in\\u001bbox"$/,
    );
    try {
      assertValidName("machine name", "bad name");
    } catch (e) {
      expect((e as Error).message).not.toMatch(/\^\[|\]\{0,/);
    }
  });

  it("a refused conversation id is explained in words too", () => {
    expect(() => assertConversationId("no spaces")).toThrow(
      /conversation id must be 1 to 128 letters, digits, dots, colons, dashes or underscores.*got "no spaces"/,
    );
  });
});

describe("issue 32 item 4: one id, one delivery (canonical ids at the edge)", () => {
  const id = "25d3a6f0-1b2c-4d5e-8f90-a1b2c3d4e5f6";

  it("a UUID in any case has one canonical form, lower case (RFC 9562: case-insensitive on input)", () => {
    expect(canonicalUuid(id.toUpperCase())).toBe(id);
    expect(canonicalUuid("25D3a6F0-1b2C-4d5E-8F90-a1B2c3D4e5F6")).toBe(id);
    expect(parseUuid("deliveryId", id.toUpperCase())).toBe(id);
    expect(canonicalUuid("not-a-uuid")).toBeUndefined();
    expect(() => parseUuid("deliveryId", "not-a-uuid")).toThrow(/^deliveryId must be a UUID, got "not-a-uuid"$/);
  });

  it("a reference that may be a UUID is canonical when it is one and kept as given when not", () => {
    expect(canonicalRef(id.toUpperCase())).toBe(id);
    expect(canonicalRef("Event-7")).toBe("Event-7");
  });
});

describe("issue 32 item 7: error texts quote at most 100 characters of an input", () => {
  it("quotes a short input whole, as JSON, and a long one cut at 100 with its length", () => {
    expect(quoteInput("in\u0000box")).toBe('"in\\u0000box"');
    expect(quoteInput("s".repeat(10_000))).toBe(`"${"s".repeat(100)}"… (10000 characters)`);
    expect(() => parseUuid("deliveryId", "x".repeat(5000))).toThrow(
      /^deliveryId must be a UUID, got "x{100}"… \(5000 characters\)$/,
    );
    expect(() => assertValidName("seat name", "n".repeat(10_000))).toThrow(/got "n{100}"… \(10000 characters\)$/);
  });

  it("a seat ref that no name can match (a NUL, a space) is refused before the journal, naming the NUL", () => {
    expect(() => assertSeatRef("seat", "in\u0000box")).toThrow(/NUL byte/);
    expect(() => assertSeatRef("seat", "in box")).toThrow(/must be "machine\/name" or a seat name/);
    expect(() => assertSeatRef("seat", "m1/inbox")).not.toThrow();
    expect(() => assertSeatRef("seat", "inbox")).not.toThrow();
  });
});

describe("issue 32 item 7: text is delivered exactly or refused", () => {
  it("a lone surrogate is not well formed and is refused as invalid_text; a whole pair is text", () => {
    expect(isWellFormedText("a whole pair \ud83d\ude00")).toBe(true);
    for (const bad of ["\ud800", "x\udc00y", "\ud83d end"]) {
      expect(isWellFormedText(bad)).toBe(false);
      expect(() => assertWellFormedText("message", bad)).toThrow(InvalidTextError);
    }
    expect(() => assertJournalText("text", "nul \u0000")).toThrow(/NUL byte/);
  });
});
