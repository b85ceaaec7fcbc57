import { describe, expect, it } from "vitest";
import { callFingerprint, canonicalJson, contentFingerprint, normalizeContent } from "../../../shared/fingerprint.js";

describe("fingerprint.callFingerprint", () => {
  it("binds a receipt to tool and arguments regardless of key order (rule 6)", () => {
    expect(callFingerprint("message_seat", { seat: "a", message: "hi" })).toBe(
      callFingerprint("message_seat", { message: "hi", seat: "a" }),
    );
    expect(callFingerprint("message_seat", { seat: "a", message: "hi" })).not.toBe(
      callFingerprint("hire_agent", { seat: "a", message: "hi" }),
    );
    expect(callFingerprint("message_seat", { seat: "a", message: "hi" })).not.toBe(
      callFingerprint("message_seat", { seat: "a", message: "hi!" }),
    );
  });
  it("never contains the request text", () => {
    const fp = callFingerprint("message_seat", { seat: "a", message: "secret plan" });
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
    expect(fp).not.toContain("secret");
  });
  it("drops undefined fields, so an omitted optional argument equals an absent one", () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe(canonicalJson({ a: 1 }));
  });
});

describe("fingerprint.contentFingerprint", () => {
  it("compares trimmed, LF-normalised content (rule 14)", () => {
    expect(normalizeContent("  hello\r\nworld\r ")).toBe("hello\nworld");
    expect(contentFingerprint("hello\r\nworld\n")).toBe(contentFingerprint(" hello\nworld"));
    expect(contentFingerprint("hello world")).not.toBe(contentFingerprint("hello  world"));
  });
});
