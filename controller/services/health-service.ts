/**
 * grpc.health.v1, implemented for connect-node (the grpc-health-check package only fits
 * grpc-js servers). The overall status ("") and "database" are SERVING only while the
 * journal answers; each of our services is listed by its full name.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { Health, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus as Serving, HealthListResponseSchema } from "../../shared/gen/grpc/health/v1/health_pb.js";

export interface HealthDeps {
  services: string[];
  pingDatabase: () => Promise<void>;
  isStopping: () => boolean;
}

async function statusOf(d: HealthDeps, service: string): Promise<Serving | undefined> {
  if (service !== "" && service !== "database" && !d.services.includes(service)) return undefined;
  if (d.isStopping()) return Serving.NOT_SERVING;
  try {
    await d.pingDatabase();
    return Serving.SERVING;
  } catch {
    return Serving.NOT_SERVING;
  }
}

export function createHealthService(d: HealthDeps): ServiceImpl<typeof Health> {
  return {
    async check(req) {
      const status = await statusOf(d, req.service);
      if (status === undefined) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
      return create(HealthCheckResponseSchema, { status });
    },
    async list() {
      const statuses: Record<string, ReturnType<typeof create<typeof HealthCheckResponseSchema>>> = {};
      for (const s of ["", "database", ...d.services]) statuses[s] = create(HealthCheckResponseSchema, { status: (await statusOf(d, s))! });
      return create(HealthListResponseSchema, { statuses });
    },
    async *watch(req, ctx) {
      let last: Serving | undefined;
      while (!ctx.signal.aborted) {
        const status = (await statusOf(d, req.service)) ?? Serving.SERVICE_UNKNOWN;
        if (status !== last) yield create(HealthCheckResponseSchema, { status });
        last = status;
        await new Promise((r) => setTimeout(r, 1000));
      }
    },
  };
}
