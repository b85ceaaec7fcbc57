/** OpenCode's pure parts: our id inside OpenCode message ids, and recognising a bindable TUI argv. */
import { describe, expect, it } from "vitest";
import { deliveryIdOf, v1MessageId, v2MessageId } from "../../../../../node-agent/harnesses/opencode/ids.js";
import { openCodeTarget } from "../../../../../node-agent/harnesses/opencode/discover.js";

const ID = "3f41ab65-abc4-4903-ab00-0cd2607ba952";

describe("opencode-ids", () => {
  it("our delivery id survives the round trip through a v2 and a v1 message id", () => {
    expect(deliveryIdOf(v2MessageId(ID))).toBe(ID);
    expect(deliveryIdOf(v1MessageId(ID, Date.now()))).toBe(ID);
  });

  it("v1 ids sort by time, as OpenCode orders v1 messages by id", () => {
    expect(v1MessageId(ID, 1000) < v1MessageId("00000000-0000-4000-8000-000000000000", 2000)).toBe(true);
  });

  it("OpenCode's own message ids are never taken for ours", () => {
    expect(deliveryIdOf("msg_22c01a6f7001Jo7I1R4Y0l4niJ")).toBeUndefined();
  });

  it("a delivery id that is not a UUID is refused rather than mangled", () => {
    expect(() => v2MessageId("not-a-uuid")).toThrow();
  });
});

describe("opencode-discover.openCodeTarget", () => {
  it("binds a TUI that names its loopback port and exact session", () => {
    expect(openCodeTarget(["/usr/bin/opencode", "--port", "4096", "--session", "ses_abc"])).toEqual({
      baseUrl: "http://127.0.0.1:4096",
      sessionId: "ses_abc",
    });
    expect(openCodeTarget(["node", "/x/bin/opencode", "attach", "http://127.0.0.1:5000", "-s", "ses_q"])).toEqual({
      baseUrl: "http://127.0.0.1:5000",
      sessionId: "ses_q",
    });
  });

  it("refuses a TUI without an exact session, with a random port, or on a non-loopback host", () => {
    expect(openCodeTarget(["opencode", "--port", "4096"])).toBeUndefined();
    expect(openCodeTarget(["opencode", "--session", "ses_a"])).toBeUndefined();
    expect(
      openCodeTarget(["opencode", "--port", "4096", "--hostname", "0.0.0.0", "--session", "ses_a"]),
    ).toBeUndefined();
    expect(openCodeTarget(["opencode", "attach", "http://example.com:80", "--session", "ses_a"])).toBeUndefined();
  });
});
