/**
 * The agent's HireSeat answer in the lead's words: spawned with seat, brief and proofs;
 * delivery_unconfirmed and start_unconfirmed stay uncertain (reconcile, never hire again);
 * other failures keep their reason and the owner's control.reason / control.fix.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { HireSeatResponseSchema } from "../../../../shared/gen/clankie/fleet/v1/hire_pb.js";
import {
  InputCapabilitiesSchema,
  SeatSchema,
  SeatKind,
  DeliveryMode,
} from "../../../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { bodyFromAgent } from "../../../../controller/hire/hire-record.js";
import { hireAgentArgs } from "../../../../controller/hire/args.js";

const base = { schemaVersion: 1 as const, hireId: "h", machine: "box", harness: "codex" };
const seat = create(SeatSchema, {
  name: "codex-3",
  kind: SeatKind.CODEX,
  occupantId: "occ",
  inputCapabilities: create(InputCapabilitiesSchema, {
    deliveryModes: [DeliveryMode.STEER, DeliveryMode.QUEUE],
    interrupt: true,
  }),
});

describe("bodyFromAgent", () => {
  it("spawned names the fleet-wide seat, its capabilities, the brief's mechanism and the proofs", () => {
    const body = bodyFromAgent(
      base,
      create(HireSeatResponseSchema, {
        outcome: "spawned",
        detail: "ok",
        seat,
        paneId: "%3",
        briefMechanism: "started",
        briefDeliveryId: "b",
        launchCommitted: true,
        proofs: [{ kind: "codex_process", outcome: "proven", detail: "", ageAtWriteMs: 3 }],
      }),
    );
    expect(body).toMatchObject({
      outcome: "spawned",
      seat: "box/codex-3",
      occupantId: "occ",
      paneId: "%3",
      brief: { mechanism: "started", deliveryId: "b" },
      inputCapabilities: { deliveryModes: ["steer", "queue"], interrupt: true, nextTurnOnly: false },
    });
    expect(body.proofs).toHaveLength(1);
  });

  it("delivery_unconfirmed keeps the seat and is uncertain: reconcile it, never hire again", () => {
    const body = bodyFromAgent(
      base,
      create(HireSeatResponseSchema, {
        outcome: "failed",
        reason: "delivery_unconfirmed",
        detail: "lost",
        seat,
        briefMechanism: "unconfirmed",
        briefDeliveryId: "b",
        launchCommitted: true,
      }),
    );
    expect(body).toMatchObject({
      outcome: "failed",
      reason: "delivery_unconfirmed",
      deliveryStage: "uncertain",
      reconcileTool: "reconcile_seat_call",
      seat: "box/codex-3",
      launchCommitted: true,
    });
  });

  it("a failure keeps its reason and the owner's control", () => {
    const body = bodyFromAgent(
      base,
      create(HireSeatResponseSchema, {
        outcome: "failed",
        reason: "trust_required",
        detail: "d",
        controlReason: "trust_required",
        controlFix: "answer it",
        paneId: "%4",
        launchCommitted: true,
      }),
    );
    expect(body).toMatchObject({
      outcome: "failed",
      reason: "trust_required",
      control: { reason: "trust_required", fix: "answer it" },
      paneId: "%4",
    });
    expect(body.deliveryStage).toBeUndefined();
  });
});

describe("hire_agent arguments", () => {
  const ok = { harness: "pi", workingDirectory: "/w", title: "t", role: "r" };
  it("accepts the spec's fields and refuses anything else", () => {
    expect(
      hireAgentArgs.safeParse({
        ...ok,
        brief: "b",
        machine: "m1",
        model: "mock/m",
        effort: "high",
        freshIntent: {
          id: "7b0c8f6e-2a8b-4f3e-9d55-0c1f2e3a4b5c",
          afterReceiptId: "7b0c8f6e-2a8b-4f3e-9d55-0c1f2e3a4b5d",
        },
      }).success,
    ).toBe(true);
    expect(hireAgentArgs.safeParse({ ...ok, resume: "x" }).success).toBe(false);
    expect(
      hireAgentArgs.safeParse({ ...ok, freshIntent: { id: "7b0c8f6e-2a8b-4f3e-9d55-0c1f2e3a4b5c" } }).success,
    ).toBe(false);
    expect(hireAgentArgs.safeParse({ ...ok, role: "line\nbreak" }).success).toBe(false);
    expect(hireAgentArgs.safeParse({ ...ok, model: "--dangerously" }).success).toBe(false);
    expect(hireAgentArgs.safeParse({ ...ok, workingDirectory: "/a/./b/.." }).success).toBe(false);
  });
});
