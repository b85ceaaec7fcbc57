/**
 * Issue 32 item 7: no SQL state or SQL text reaches a lead. A database failure is described to a
 * lead in words only (controller/db/error-text.ts); the SQLSTATE goes to the controller's log.
 */
import { describe, expect, it } from "vitest";
import { databaseFailure, journalCause, journalFailure } from "../../../../controller/db/error-text.js";
import { errorResult } from "../../../../controller/mcp/tool-result.js";

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe("issue 32 item 7: database failures in words, never their SQLSTATE or text", () => {
  it("names the kind of a known SQLSTATE, and only the kind", () => {
    expect(journalCause(pgError("55P03", "canceling statement due to lock timeout"))).toBe("lock wait timed out");
    expect(journalCause(pgError("XX000", "internal"))).toBe("database error");
    expect(
      journalFailure(pgError("22021", 'invalid byte sequence for encoding "UTF8": 0x00'), "the write failed").message,
    ).not.toMatch(/SQLSTATE|22021|UTF8|0x00/);
  });

  it("a raw database error that reaches a lead's tool result is typed, and carries neither its text nor its code", () => {
    const raw = pgError("22021", 'invalid byte sequence for encoding "UTF8": 0x00');
    const r = errorResult(raw);
    expect(r.structuredContent).toMatchObject({ outcome: "invalid_argument", reason: "invalid_argument" });
    expect(JSON.stringify(r)).not.toMatch(/SQLSTATE|22021|invalid byte sequence|0x00/);
    expect(databaseFailure(raw)).not.toBe(raw);
  });
});
