/**
 * Rule 41 at the controller: a harness's own delivery stage (OpenCode's stored / consumed)
 * reaches the lead's body only where it agrees with the agent's result; an empty or
 * contradicting stage leaves the stage the result implies.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { DeliverResponseSchema } from "../../../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { AgentResult, agentResultWire } from "../../../../shared/verdicts.js";
import { bodyFromAgent } from "../../../../controller/delivery/verdict.js";

const base = { schemaVersion: 1 as const, deliveryId: "d", seat: "box/oc" };
const res = (result: AgentResult, deliveryStage: string) =>
  create(DeliverResponseSchema, { result: agentResultWire.encode(result), deliveryStage, detail: "x" });

describe("rule 41: the native stage in the lead's body", () => {
  it("stored on a queued write and consumed on a delivered one are kept", () => {
    expect(bodyFromAgent(base, res(AgentResult.Queued, "stored"))).toMatchObject({
      outcome: "delivered",
      deliveryStage: "stored",
      state: "queued",
    });
    expect(bodyFromAgent(base, res(AgentResult.Delivered, "consumed"))).toMatchObject({
      outcome: "delivered",
      deliveryStage: "consumed",
    });
  });
  it("no native stage keeps the derived one; a stage that contradicts the result is ignored", () => {
    expect(bodyFromAgent(base, res(AgentResult.Queued, ""))).toMatchObject({ deliveryStage: "delivered" });
    expect(bodyFromAgent(base, res(AgentResult.Unconfirmed, "consumed"))).toMatchObject({
      outcome: "unconfirmed",
      deliveryStage: "uncertain",
    });
    expect(bodyFromAgent(base, res(AgentResult.NotSent, "stored"))).toMatchObject({
      outcome: "undelivered",
      deliveryStage: "unavailable",
    });
  });
});
