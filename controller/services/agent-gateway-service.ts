/** AgentGatewayService: node agents register, heartbeat and report their seats here. */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  AgentGatewayService,
  HeartbeatResponseSchema,
  RegisterResponseSchema,
  ReportEventsResponseSchema,
  ReportSeatsResponseSchema,
  SubmitWorkerReportsResponseSchema,
} from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { CAPABILITY_VERSION } from "../../shared/capability-version.js";
import { isUuid, isValidName } from "../../shared/ids.js";
import type { Db } from "../db/open.js";
import { acceptReports } from "../reports/worker-reports.js";
import type { Logger } from "../../shared/logger.js";
import type { Registry } from "../nodes/registry.js";

const MAX_REPORT_CHARS = 32_768;

export function createAgentGatewayService(registry: Registry, logger: Logger, reports: { db: Db; now: () => Date; onChange: () => void }): ServiceImpl<typeof AgentGatewayService> {
  return {
    async register(req) {
      if (!isValidName(req.machine)) throw new ConnectError("machine must be 1-64 letters, digits, '.', '-' or '_'", Code.InvalidArgument);
      let endpoint: URL;
      try {
        endpoint = new URL(req.endpoint);
      } catch {
        throw new ConnectError(`endpoint is not a URL: ${req.endpoint}`, Code.InvalidArgument);
      }
      if (endpoint.protocol !== "http:" && endpoint.protocol !== "https:") throw new ConnectError("endpoint must be http(s)", Code.InvalidArgument);
      if (!req.agentToken || !req.instanceId) throw new ConnectError("agent_token and instance_id are required", Code.InvalidArgument);
      for (const s of req.seats) {
        if (!isValidName(s.name)) throw new ConnectError(`seat name ${JSON.stringify(s.name)} is not valid`, Code.InvalidArgument);
      }
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
      return create(RegisterResponseSchema, { heartbeatIntervalMs: registry.heartbeatIntervalMs, controllerCapabilityVersion: CAPABILITY_VERSION });
    },
    async heartbeat(req) {
      return create(HeartbeatResponseSchema, { known: await registry.heartbeat(req.machine, req.instanceId) });
    },
    async reportSeats(req) {
      if (!(await registry.reportSeats(req.machine, req.instanceId, req.seats))) {
        throw new ConnectError("unknown agent instance; register again", Code.FailedPrecondition);
      }
      return create(ReportSeatsResponseSchema, {});
    },
    async submitWorkerReports(req) {
      if (!(await registry.heartbeat(req.machine, req.instanceId))) throw new ConnectError("unknown agent instance; register again", Code.FailedPrecondition);
      for (const r of req.reports) {
        if (!isUuid(r.id)) throw new ConnectError(`report id ${JSON.stringify(r.id)} is not a uuid`, Code.InvalidArgument);
        if (!isValidName(r.seatName)) throw new ConnectError(`seat name ${JSON.stringify(r.seatName)} is not valid`, Code.InvalidArgument);
        if (r.text.length === 0 || r.text.length > MAX_REPORT_CHARS) throw new ConnectError(`report ${r.id} must have 1-${MAX_REPORT_CHARS} characters`, Code.InvalidArgument);
      }
      const acceptedIds = await acceptReports(
        reports.db,
        req.machine,
        req.reports.map((r) => ({ id: r.id, seatName: r.seatName, text: r.text, createdAtMs: Number(r.createdUnixMs) })),
        reports.now(),
      );
      if (acceptedIds.length) reports.onChange();
      return create(SubmitWorkerReportsResponseSchema, { acceptedIds });
    },
    async reportEvents(req) {
      if (!(await registry.heartbeat(req.machine, req.instanceId))) throw new ConnectError("unknown agent instance; register again", Code.FailedPrecondition);
      for (const e of req.events) logger.info("seat event", { machine: req.machine, seat: e.seatName, kind: e.kind, subject: e.subjectId });
      return create(ReportEventsResponseSchema, {});
    },
  };
}
