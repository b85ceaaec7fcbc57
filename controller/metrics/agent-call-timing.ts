/**
 * Times the controller's unary calls to node agents (deliver, inspect, hire, census…) for
 * `clankie_agent_call_seconds`, as a Connect interceptor on every reverse link. Streams are not
 * timed: their call returns at the headers, so the time would say nothing. Method names and
 * code names are closed sets, never an id.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

export type AgentCallObserver = (method: string, code: string, seconds: number) => void;

export function agentCallTiming(observe: AgentCallObserver): Interceptor {
  return (next) => async (req) => {
    if (req.stream) return next(req);
    const startedAt = performance.now();
    const done = (code: string) => observe(req.method.name, code, (performance.now() - startedAt) / 1000);
    try {
      const res = await next(req);
      done("ok");
      return res;
    } catch (e) {
      done(codeName(ConnectError.from(e).code));
      throw e;
    }
  };
}

/** Connect's code as its snake_case word (deadline_exceeded, unavailable), as gRPC names them. */
function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/[A-Z]/g, (c, i: number) => (i ? "_" : "") + c.toLowerCase());
}
