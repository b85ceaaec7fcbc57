/**
 * The lead tools' contract as an MCP client sees it: every tool carries annotations (read-only
 * for list_seats, worker_reports and worker_report_status; destructive for stop_task and
 * reconcile_seat_call, whose settle abandons a receipt) and an outputSchema of type object;
 * one result vocabulary (`outcome`, never `result`); and the official client, which validates
 * structured content against the outputSchema, accepts each answer, refusals included.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { AddSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { SeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";

describe("MCP tool annotations, output schemas and the outcome vocabulary", () => {
  let fleet: TestFleet;
  let lead: LeadClient;

  beforeAll(async () => {
    fleet = await startFleet("pglite");
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).owner.addSeat(
      create(AddSeatRequestSchema, { name: "inbox", kind: SeatKind.MAILBOX }),
    );
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
  });
  afterAll(async () => {
    await lead?.close();
    await fleet?.close();
  });

  it("every tool has annotations and an object outputSchema; read-only and destructive hints where they apply", async () => {
    const { tools } = await lead.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const t of tools) {
      expect(t.annotations, t.name).toBeDefined();
      expect(t.outputSchema?.type, t.name).toBe("object");
    }
    for (const name of ["list_seats", "worker_reports", "worker_report_status"])
      expect(byName.get(name)!.annotations).toMatchObject({ readOnlyHint: true });
    for (const name of ["message_seat", "stop_task", "reconcile_seat_call", "acknowledge_worker_reports"])
      expect(byName.get(name)!.annotations!.readOnlyHint, name).toBe(false);
    expect(byName.get("stop_task")!.annotations).toMatchObject({ destructiveHint: true });
    expect(byName.get("reconcile_seat_call")!.annotations).toMatchObject({
      destructiveHint: true,
      idempotentHint: true,
    });
    expect(byName.get("message_seat")!.annotations).toMatchObject({ destructiveHint: false, openWorldHint: true });
    expect(byName.get("reconcile_seat_call")!.description).toMatch(/Without "settle" it only reads/);
  });

  it("answers validate against their outputSchema (the client checks), and every tool that acts says so in `outcome`", async () => {
    // A freshness-gate refusal on a loaded machine is a definite not-sent (and validates too): ask again.
    let sent = await lead.call("message_seat", { seat: "inbox", message: "schema check" });
    for (let i = 0; i < 5 && sent.structuredContent?.reason === "proof_stale"; i++)
      sent = await lead.call("message_seat", { seat: "inbox", message: "schema check" });
    expect(sent.structuredContent, JSON.stringify(sent.structuredContent)).toMatchObject({ outcome: "delivered" });
    const unknown = await lead.call("message_seat", { seat: "nobody", message: "schema check" });
    expect(unknown.structuredContent, JSON.stringify(unknown.structuredContent)).toMatchObject({
      outcome: "unknown_seat",
    });
    const refused = await lead.call(
      "message_seat",
      { seat: "inbox", message: "x" },
      { "clankie/seat-call": { deliveryId: "not-a-uuid" } },
    );
    expect(refused.structuredContent, JSON.stringify(refused.structuredContent)).toMatchObject({
      outcome: "invalid_argument",
      dispatched: false,
    });
    const rec = await lead.call("reconcile_seat_call", { deliveryId: sent.structuredContent!.deliveryId });
    expect(rec.structuredContent, JSON.stringify(rec.structuredContent)).toEqual(sent.structuredContent);
    const none = await lead.call("reconcile_seat_call", { deliveryId: "00000000-0000-4000-8000-000000000000" });
    expect(none.structuredContent, JSON.stringify(none.structuredContent)).toMatchObject({
      outcome: "no_matching_receipt",
    });
    const stop = await lead.call("stop_task", { seat: "inbox" });
    expect(stop.structuredContent, JSON.stringify(stop.structuredContent)).toMatchObject({ outcome: "unsupported" });
    expect(stop.structuredContent).not.toHaveProperty("result");
    const seats = await lead.call("list_seats", {});
    expect(seats.structuredContent, JSON.stringify(seats.structuredContent)).toMatchObject({
      schemaVersion: 1,
      seats: [expect.objectContaining({ id: "testbox/inbox" })],
    });
    expect((await lead.call("worker_reports", {})).structuredContent).toEqual({ schemaVersion: 1, reports: [] });
    const ack = await lead.call("acknowledge_worker_reports", {
      deliveryIds: ["00000000-0000-4000-8000-000000000000"],
    });
    expect(ack.structuredContent, JSON.stringify(ack.structuredContent)).toMatchObject({
      outcome: "acknowledged",
      acknowledged: [],
      refused: ["00000000-0000-4000-8000-000000000000"],
    });
    expect(
      (await lead.call("worker_report_status", { deliveryId: "00000000-0000-4000-8000-000000000000" }))
        .structuredContent,
    ).toMatchObject({ schemaVersion: 1, state: expect.any(String) });
  });
});
