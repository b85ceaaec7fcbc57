/**
 * Rule 42 and rule 30 (issue 16): reading a Pi session file (JSONL, Pi 0.73's session-format.md)
 * for reconciliation. A delivery is listed only under the exact entry a `clankie-delivery`
 * binding names, and only when that entry is a user message; the fingerprint is that entry's
 * own text. The same text under another id, or with no binding, is never listed.
 */
import { describe, expect, it } from "vitest";
import { contentFingerprint } from "../../../../../shared/fingerprint.js";
import { parsePiSession } from "../../../../../node-agent/harnesses/pi/session-file.js";

const line = (o: unknown) => JSON.stringify(o);
const header = line({ type: "session", version: 3, id: "s-1", timestamp: "2026-12-01T10:00:00.000Z", cwd: "/w" });
const userEntry = (id: string, text: string, at = "2026-12-01T10:00:01.000Z") =>
  line({
    type: "message",
    id,
    parentId: null,
    timestamp: at,
    message: { role: "user", content: [{ type: "text", text }], timestamp: 1 },
  });
const binding = (deliveryId: string, entryId: string) =>
  line({
    type: "custom",
    id: `c-${entryId}`,
    parentId: entryId,
    timestamp: "2026-12-01T10:00:01.100Z",
    customType: "clankie-delivery",
    data: { deliveryId, entryId },
  });

describe("rule 42: parsePiSession", () => {
  it("lists a bound delivery under Pi's entry id, with that entry's text fingerprint and time", () => {
    const read = parsePiSession([header, userEntry("a1b2c3d4", "hello"), binding("d1", "a1b2c3d4"), ""].join("\n"));
    expect(read).toEqual({
      entries: [
        {
          deliveryId: "d1",
          nativeReceiptId: "a1b2c3d4",
          contentFingerprint: contentFingerprint("hello"),
          atMs: Date.parse("2026-12-01T10:00:01.000Z"),
        },
      ],
      badLines: 0,
    });
  });

  it("rule 30: the same text under another entry id with no binding is not the delivery; a binding to a missing or non-user entry lists nothing", () => {
    const text = [
      header,
      userEntry("11111111", "same words"),
      line({
        type: "message",
        id: "22222222",
        parentId: "11111111",
        timestamp: "2026-12-01T10:00:02.000Z",
        message: { role: "assistant", content: [{ type: "text", text: "same words" }] },
      }),
      binding("d-assistant", "22222222"),
      binding("d-missing", "33333333"),
    ].join("\n");
    expect(parsePiSession(text).entries).toEqual([]);
  });

  it("a delivery bound twice keeps its first entry; a half-written last line is counted as a gap", () => {
    const text = [
      header,
      userEntry("00000001", "x"),
      userEntry("00000002", "x"),
      binding("d1", "00000001"),
      binding("d1", "00000002"),
      '{"type":"mess',
    ].join("\n");
    const read = parsePiSession(text);
    expect(read.entries.map((e) => e.nativeReceiptId)).toEqual(["00000001"]);
    expect(read.badLines).toBe(1);
  });
});
