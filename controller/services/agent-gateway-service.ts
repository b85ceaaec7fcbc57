/**
 * AgentGatewayService: node agents register, heartbeat and report their seats here, over
 * mutual TLS on the agent port. The machine is the client certificate's (ADR 0021); a
 * request naming another machine is refused.
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, FleetError } from "../../shared/errors.js";
import {
  type AgentGatewayService,
  HeartbeatResponseSchema,
  RegisterResponseSchema,
  ReportEventsResponseSchema,
  ReportSeatsResponseSchema,
  SubmitWorkerReportsResponseSchema,
} from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { CAPABILITY_VERSION } from "../../shared/capability-version.js";
import { isValidName, parseUuid } from "../../shared/ids.js";
import { quoteInput } from "../../shared/public-text.js";
import { assertJournalText } from "../../shared/well-formed-text.js";
import type { Db } from "../db/open.js";
import { acceptReports } from "../reports/worker-reports.js";
import type { Logger } from "../../shared/logger.js";
import { assertKnownSeatKinds, type Registry } from "../nodes/registry.js";
import { machineOf } from "../fleet/peer-identity.js";
import { workerGatewayMethods } from "../workers/gateway-methods.js";
import type { PipelineDeps } from "../delivery/pipeline.js";

const MAX_REPORT_CHARS = 32_768;

export interface GatewayReplicas {
  /** The agent URLs of every live replica, for the agent to link to each. */
  agentUrls(): Promise<string[]>;
}

export function createAgentGatewayService(
  registry: Registry,
  logger: Logger,
  reports: { db: Db; now: () => Date; onChange: () => void; pipeline?: PipelineDeps | undefined },
  replicas: GatewayReplicas,
): ServiceImpl<typeof AgentGatewayService> {
  return {
    // The worker and peer methods name their machine from the certificate too (gateway-methods.ts).
    ...workerGatewayMethods(registry, reports),
    async register(rq, ctx) {
      const machine = machineOf(ctx, rq.machine).machine;
      const req = { ...rq, machine, endpoint: `reverse://${machine}` };
      if (!req.agentToken || !req.instanceId)
        throw new FleetError(ErrorCode.InvalidArgument, "agent_token and instance_id are required");
      for (const s of req.seats) {
        if (!isValidName(s.name))
          throw new FleetError(ErrorCode.InvalidArgument, `seat name ${quoteInput(s.name)} is not valid`);
      }
      // An unknown seat kind is a typed InvalidArgument refusal before anything is written (registry.ts).
      assertKnownSeatKinds(req.seats);
      await registry.register({
        machine: req.machine,
        endpoint: req.endpoint,
        agentToken: req.agentToken,
        instanceId: req.instanceId,
        platform: req.platform,
        capabilityVersion: req.capabilityVersion,
        agentVersion: req.agentVersion,
        seats: req.seats,
      });
      logger.info("agent registered", { machine: req.machine, endpoint: req.endpoint, seats: req.seats.length });
      return create(RegisterResponseSchema, {
        heartbeatIntervalMs: registry.heartbeatIntervalMs,
        controllerCapabilityVersion: CAPABILITY_VERSION,
        replicaAgentUrls: await replicas.agentUrls(),
      });
    },
    async heartbeat(rq, ctx) {
      const req = { ...rq, machine: machineOf(ctx, rq.machine).machine };
      return create(HeartbeatResponseSchema, {
        known: await registry.periodicHeartbeat(req.machine, req.instanceId),
        replicaAgentUrls: await replicas.agentUrls(),
      });
    },
    async reportSeats(rq, ctx) {
      const req = { ...rq, machine: machineOf(ctx, rq.machine).machine };
      // An unknown seat kind is a typed InvalidArgument refusal before anything is written (registry.ts).
      assertKnownSeatKinds(req.seats);
      if (!(await registry.reportSeats(req.machine, req.instanceId, req.seats))) {
        throw new FleetError(ErrorCode.FailedPrecondition, "unknown agent instance; register again");
      }
      return create(ReportSeatsResponseSchema, {});
    },
    async submitWorkerReports(rq, ctx) {
      const req = { ...rq, machine: machineOf(ctx, rq.machine).machine };
      if (!(await registry.heartbeat(req.machine, req.instanceId)))
        throw new FleetError(ErrorCode.FailedPrecondition, "unknown agent instance; register again");
      for (const r of req.reports) {
        r.id = parseUuid("report id", r.id);
        if (!isValidName(r.seatName))
          throw new FleetError(ErrorCode.InvalidArgument, `seat name ${quoteInput(r.seatName)} is not valid`);
        if (r.text.length === 0 || r.text.length > MAX_REPORT_CHARS)
          throw new FleetError(ErrorCode.InvalidArgument, `report ${r.id} must have 1-${MAX_REPORT_CHARS} characters`);
        assertJournalText(`report ${r.id}`, r.text);
      }
      const acceptedIds = await acceptReports(
        reports.db,
        req.machine,
        req.reports.map((r) => ({
          id: r.id,
          seatName: r.seatName,
          text: r.text,
          createdAtMs: Number(r.createdUnixMs),
        })),
        reports.now(),
      );
      if (acceptedIds.length) reports.onChange();
      return create(SubmitWorkerReportsResponseSchema, { acceptedIds });
    },
    async reportEvents(rq, ctx) {
      const req = { ...rq, machine: machineOf(ctx, rq.machine).machine };
      if (!(await registry.heartbeat(req.machine, req.instanceId)))
        throw new FleetError(ErrorCode.FailedPrecondition, "unknown agent instance; register again");
      for (const e of req.events)
        logger.info("seat event", { machine: req.machine, seat: e.seatName, kind: e.kind, subject: e.subjectId });
      return create(ReportEventsResponseSchema, {});
    },
  };
}
