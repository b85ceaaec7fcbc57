/**
 * W3C trace context from the controller to the agents through the OpenTelemetry API. The API is
 * a no-op until the process registers an SDK (a tracer provider and a propagator), so by default
 * no span is made and no header is added; an operator turns tracing on by registering one
 * (`node --import <their otel setup> …`). Span names follow the messaging conventions' operation
 * names: the controller's Deliver call is `send`, its journal write `settle`, the agent's
 * handling `process`.
 */
import { context, propagation, ProxyTracerProvider, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { Interceptor } from "@connectrpc/connect";

const TRACER = "clankie-fleet";
const SYSTEM = { "messaging.system": "clankie" };

// The API's own no-op provider: what the global proxy hands out until an SDK registers one.
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * An SDK is registered. Until then every span is a no-op, but making one still costs its
 * attributes, a context and closures three times per delivery (issue 17's profile): skip it.
 */
function tracingOn(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

async function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Record<string, string>,
  fn: () => Promise<T>,
  parent = context.active(),
): Promise<T> {
  if (!tracingOn()) return fn();
  return trace
    .getTracer(TRACER)
    .startActiveSpan(
      name,
      { kind, attributes: { ...SYSTEM, "messaging.operation.name": name, ...attributes } },
      parent,
      async (span) => {
        try {
          return await fn();
        } catch (e) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error).message });
          throw e;
        } finally {
          span.end();
        }
      },
    );
}

/** The controller's client interceptor: each Deliver call to an agent is a `send` span whose context travels in the request headers. */
export function traceSendInterceptor(): Interceptor {
  return (next) => (req) =>
    // Only a delivery is a messaging send; inspections and stops pass through untraced.
    req.method.name !== "Deliver"
      ? next(req)
      : inSpan("send", SpanKind.PRODUCER, { "rpc.method": req.method.name }, async () => {
          propagation.inject(context.active(), req.header, { set: (h, k, v) => h.set(k, v) });
          return next(req);
        });
}

/** The agent's server interceptor: a call carrying trace context is handled in a `process` span under it. */
export function traceProcessInterceptor(): Interceptor {
  return (next) => (req) => {
    if (!tracingOn()) return next(req);
    const parent = propagation.extract(context.active(), req.header, {
      get: (h, k) => h.get(k) ?? undefined,
      keys: (h) => [...h.keys()],
    });
    if (!trace.getSpanContext(parent)) return next(req);
    return inSpan("process", SpanKind.CONSUMER, { "rpc.method": req.method.name }, () => next(req), parent);
  };
}

/** The controller's journal write of an outcome. */
export function traceSettle<T>(fn: () => Promise<T>): Promise<T> {
  return inSpan("settle", SpanKind.INTERNAL, {}, fn);
}

/** One lead call (message_seat), the parent of its `send` and `settle`. */
export function traceCall<T>(tool: string, fn: () => Promise<T>): Promise<T> {
  return inSpan(tool, SpanKind.SERVER, { "messaging.destination.name": "seat" }, fn);
}
