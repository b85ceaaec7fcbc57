/**
 * grpc.health.v1, implemented for connect-node (the grpc-health-check package only fits
 * grpc-js servers). Every answer comes from the health monitor's cached statuses
 * (health/health-monitor.ts): Check and List read it, and a Watch stream sends the status it
 * holds and then one message per change, with no work of its own between changes. How many
 * Watch streams may be open is the front door's business (http/front-door.ts).
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, FleetError } from "../../shared/errors.js";
import {
  type Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as Serving,
  HealthListResponseSchema,
  type HealthCheckResponse,
} from "../../shared/gen/grpc/health/v1/health_pb.js";
import type { HealthMonitor } from "../health/health-monitor.js";

export function createHealthService(monitor: HealthMonitor): ServiceImpl<typeof Health> {
  return {
    check(req) {
      const status = monitor.status(req.service);
      if (status === undefined) throw new FleetError(ErrorCode.NotFound, "unknown service");
      return create(HealthCheckResponseSchema, { status });
    },
    list() {
      const statuses: Record<string, HealthCheckResponse> = {};
      for (const [name, status] of monitor.snapshot().statuses)
        statuses[name] = create(HealthCheckResponseSchema, { status });
      return create(HealthListResponseSchema, { statuses });
    },
    async *watch(req, ctx) {
      // Set by a change or the stream's end while this stream waits or is suspended at a yield.
      let pending = true;
      let wake: (() => void) | undefined;
      const poke = () => {
        pending = true;
        wake?.();
      };
      const unsubscribe = monitor.onChange(poke);
      ctx.signal.addEventListener("abort", poke);
      try {
        let last: Serving | undefined;
        while (!ctx.signal.aborted) {
          if (!pending) await new Promise<void>((resolve) => (wake = resolve));
          pending = false;
          const status = monitor.status(req.service) ?? Serving.SERVICE_UNKNOWN;
          if (status !== last && !ctx.signal.aborted) yield create(HealthCheckResponseSchema, { status });
          last = status;
        }
      } finally {
        unsubscribe();
        ctx.signal.removeEventListener("abort", poke);
      }
    },
  };
}
