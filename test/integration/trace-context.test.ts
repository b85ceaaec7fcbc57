/**
 * Trace context from the controller to the agent (OpenTelemetry API; ADR 0060). With a real
 * OpenTelemetry SDK registered in this process, one message_seat call makes a `message_seat`
 * span with two children, `send` (the Deliver call) and `settle` (the journal write), and the
 * agent's `process` span continues the same trace under `send`: the W3C context crossed the
 * gRPC call in its headers. Without an SDK, the API is a no-op (nothing to record).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { context, propagation, SpanKind, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { create } from "@bufbuild/protobuf";
import { AddSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { SeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";

describe("trace context controller → agent (OpenTelemetry)", () => {
  const exporter = new InMemorySpanExporter();
  let fleet: TestFleet;

  beforeAll(async () => {
    fleet = await startFleet("pglite");
    const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.owner.addSeat(create(AddSeatRequestSchema, { name: "inbox", kind: SeatKind.MAILBOX }));
  });
  afterAll(async () => {
    await fleet?.close();
    trace.disable();
    propagation.disable();
    context.disable();
  });

  it("without an SDK registered, a delivery records nothing and still succeeds", async () => {
    const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    const res = await lead.call("message_seat", { seat: "inbox", message: "untraced" });
    await lead.close();
    expect(res.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("with an SDK: message_seat → send → (agent) process, and settle, in one trace", async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

    const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    const res = await lead.call("message_seat", { seat: "inbox", message: "traced" });
    await lead.close();
    // Delivered, or refused by the agent's freshness gate on a loaded machine: either way the Deliver call went out and was settled.
    expect(["delivered", "undelivered"]).toContain(res.structuredContent!.outcome);

    const spans = exporter.getFinishedSpans();
    const byName = (n: string) => spans.filter((s) => s.name === n);
    expect(byName("message_seat")).toHaveLength(1);
    expect(byName("send")).toHaveLength(1);
    expect(byName("process")).toHaveLength(1);
    expect(byName("settle")).toHaveLength(1);
    const [call, send, processed, settle] = ["message_seat", "send", "process", "settle"].map((n) => byName(n)[0]!);
    const traceId = call!.spanContext().traceId;
    for (const s of [send, processed, settle]) expect(s!.spanContext().traceId).toBe(traceId);
    expect(send!.parentSpanContext?.spanId).toBe(call!.spanContext().spanId);
    expect(settle!.parentSpanContext?.spanId).toBe(call!.spanContext().spanId);
    // The agent's span is the child of the controller's send: the context crossed the wire.
    expect(processed!.parentSpanContext?.spanId).toBe(send!.spanContext().spanId);
    expect(processed!.parentSpanContext?.isRemote).toBe(true);
    expect(send!.kind).toBe(SpanKind.PRODUCER);
    expect(processed!.kind).toBe(SpanKind.CONSUMER);
    expect(send!.attributes).toMatchObject({ "messaging.operation.name": "send", "rpc.method": "Deliver" });
    // No message text or id in the attributes.
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain("traced");
  });
});
