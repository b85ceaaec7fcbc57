/**
 * Rule 41: OpenCode's status → stage mapping is one explicit table, and every write result
 * the adapter can give lands on exactly the status the spec names for it.
 */
import { describe, expect, it } from "vitest";
import { AgentResult } from "../../../../../shared/verdicts.js";
import { OPENCODE_STAGE, openCodeStatus } from "../../../../../node-agent/harnesses/opencode/stages.js";

describe("rule 41: the OpenCode status → stage table", () => {
  it("pending and busy are stored, delivered is consumed, uncertain stays uncertain, unbound is unavailable; nothing else", () => {
    expect(OPENCODE_STAGE).toEqual({
      pending: "stored",
      busy: "stored",
      delivered: "consumed",
      uncertain: "uncertain",
      unbound: "unavailable",
    });
    expect(Object.isFrozen(OPENCODE_STAGE)).toBe(true);
  });
  it("each write result has its status: admitted idle = pending, admitted during a turn = busy, a turn began = delivered, lost = uncertain, not sent = unbound", () => {
    expect(openCodeStatus(AgentResult.Queued, false)).toBe("pending");
    expect(openCodeStatus(AgentResult.Queued, true)).toBe("busy");
    expect(openCodeStatus(AgentResult.Steered, true)).toBe("busy");
    expect(openCodeStatus(AgentResult.Delivered, false)).toBe("delivered");
    expect(openCodeStatus(AgentResult.Unconfirmed, true)).toBe("uncertain");
    expect(openCodeStatus(AgentResult.NotSent, false)).toBe("unbound");
    // A pre-send refusal (explicit steer to an idle session) has no OpenCode status: the controller's rejected stands.
    expect(openCodeStatus(AgentResult.Rejected, false)).toBeUndefined();
  });
});
