/**
 * grpc.health.v1, implemented for connect-node (the grpc-health-check package only fits
 * grpc-js servers). Components: "database" is SERVING while the journal answers; "agents" is
 * SERVING while at least one node agent is online; the whole server ("") and each of our
 * services by its full name are SERVING while the journal answers and no stop has begun (a
 * controller without agents still admits and refuses calls correctly, so it is not down).
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, FleetError } from "../../shared/errors.js";
import { Health, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus as Serving, HealthListResponseSchema } from "../../shared/gen/grpc/health/v1/health_pb.js";

export const HEALTH_DATABASE = "database";
export const HEALTH_AGENTS = "agents";

export interface HealthDeps {
  services: string[];
  pingDatabase: () => Promise<void>;
  /** How many node agents are online now. */
  agentsOnline: () => Promise<number>;
  isStopping: () => boolean;
}

async function answers(f: () => Promise<unknown>): Promise<boolean> {
  try {
    await f();
    return true;
  } catch {
    return false;
  }
}

async function statusOf(d: HealthDeps, service: string): Promise<Serving | undefined> {
  if (service !== "" && service !== HEALTH_DATABASE && service !== HEALTH_AGENTS && !d.services.includes(service)) return undefined;
  if (d.isStopping()) return Serving.NOT_SERVING;
  if (service === HEALTH_AGENTS) return (await d.agentsOnline().catch(() => 0)) > 0 ? Serving.SERVING : Serving.NOT_SERVING;
  return (await answers(d.pingDatabase)) ? Serving.SERVING : Serving.NOT_SERVING;
}

export function createHealthService(d: HealthDeps): ServiceImpl<typeof Health> {
  return {
    async check(req) {
      const status = await statusOf(d, req.service);
      if (status === undefined) throw new FleetError(ErrorCode.NotFound, `unknown service ${req.service}`);
      return create(HealthCheckResponseSchema, { status });
    },
    async list() {
      const statuses: Record<string, ReturnType<typeof create<typeof HealthCheckResponseSchema>>> = {};
      for (const s of ["", HEALTH_DATABASE, HEALTH_AGENTS, ...d.services]) statuses[s] = create(HealthCheckResponseSchema, { status: (await statusOf(d, s))! });
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
