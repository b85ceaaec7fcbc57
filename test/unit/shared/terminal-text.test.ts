/**
 * Terminal safety of plain-text CLI output (issue 11, part 4): escapes, C1 controls, bidi
 * overrides and separators are shown visibly and never raw; a body's lines are indented so
 * a newline cannot fake a header line; tables escape every cell.
 */
import { describe, expect, it } from "vitest";
import { hasUnsafeChars, visibleBlock, visibleInline } from "../../../shared/terminal-text.js";
import { table } from "../../../cli/output.js";

const HOSTILE = "\u001b[2J\u001b]0;pwned\u0007\u202eevil\u2066x\u2069\u0085\u009b31m\u0000\r\u2028end";

describe("terminal text", () => {
  it("shows every control, C1, bidi and separator character as a visible escape", () => {
    const v = visibleInline(HOSTILE);
    expect(hasUnsafeChars(v)).toBe(false);
    expect(v).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(v).toBe("\\x1b[2J\\x1b]0;pwned\\x07\\u202eevil\\u2066x\\u2069\\x85\\x9b31m\\x00\\x0d\\u2028end");
  });

  it("cannot be tricked by a literal backslash sequence: a backslash is doubled", () => {
    expect(visibleInline("a\\x1b")).toBe("a\\\\x1b");
  });

  it("inline text cannot span lines", () => {
    expect(visibleInline("one\ntwo\tthree")).toBe("one\\ntwo\\tthree");
  });

  it("a block keeps its lines but indents each, so none can look like a header", () => {
    const fake =
      "hello\n#2 2026-01-01T00:00:00.000Z from global-default (00000000-0000-4000-8000-000000000000)\nbye\u001b[0m";
    const lines = visibleBlock(fake).split("\n");
    expect(lines).toEqual([
      "  | hello",
      "  | #2 2026-01-01T00:00:00.000Z from global-default (00000000-0000-4000-8000-000000000000)",
      "  | bye\\x1b[0m",
    ]);
  });

  it("plain text without controls is unchanged (inline)", () => {
    expect(visibleInline("box/inbox — ünïcødé ✓")).toBe("box/inbox — ünïcødé ✓");
  });

  it("tables escape every string cell", () => {
    const t = table([{ id: "a\u001b[31m", n: 3 }], ["id", "n"]);
    expect(t).not.toMatch(/\u001b/);
    expect(t).toContain("a\\x1b[31m");
  });
});
