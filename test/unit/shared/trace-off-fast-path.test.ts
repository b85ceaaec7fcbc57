/**
 * Issue 17 item 2 (per-call work when tracing is off): with no OpenTelemetry SDK registered,
 * a lead call, its settle and its Deliver make no span at all (the API's no-op spans still
 * cost attributes, contexts and closures, three times per delivery). Registering an SDK is
 * covered by test/integration/trace-context.test.ts.
 */
import { describe, expect, it, vi } from "vitest";
import { trace } from "@opentelemetry/api";
import { traceCall, traceSettle } from "../../../shared/rpc/trace-context.js";

describe("tracing off: no span work per call (issue 17)", () => {
  it("traceCall and traceSettle run their function without asking for a tracer", async () => {
    const getTracer = vi.spyOn(trace, "getTracer");
    try {
      expect(await traceCall("message_seat", async () => traceSettle(async () => 42))).toBe(42);
      expect(getTracer).not.toHaveBeenCalled();
    } finally {
      getTracer.mockRestore();
    }
  });

  it("a failure still reaches the caller unchanged", async () => {
    await expect(traceCall("message_seat", async () => Promise.reject(new Error("journal down")))).rejects.toThrow(
      "journal down",
    );
  });
});
