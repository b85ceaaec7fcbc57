/**
 * The agent's link to its controller: register (with backoff until it answers), heartbeat,
 * and report the seat list whenever it changes. A heartbeat the controller does not know
 * triggers a fresh registration, so a controller restart heals by itself. Every call goes
 * over mutual TLS with the agent's machine certificate; the controller's is pinned to the
 * fleet CA. Each answer names the live replicas, which the reverse links follow.
 * A typed machine_revoked refusal (issue 37) ends the link for good: retrying cannot succeed.
 */
import { create } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  AgentGatewayService,
  HeartbeatRequestSchema,
  RegisterRequestSchema,
  ReportSeatsRequestSchema,
  SubmitWorkerReportsRequestSchema,
  WorkerReportSchema,
} from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import type { Seat } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { CAPABILITY_VERSION } from "../../shared/capability-version.js";
import type { TlsMaterial } from "../identity/identity-keeper.js";
import type { Logger } from "../../shared/logger.js";
import { ErrorCode, FleetError } from "../../shared/errors.js";

export interface ControllerLinkOptions {
  controllerUrl: string;
  /** The current certificate, key and pinned CA (they change when the certificate is renewed). */
  tls: () => TlsMaterial;
  machine: string;
  endpoint: string;
  agentToken: string;
  instanceId: string;
  platform: string;
  agentVersion: string;
  seats: () => Promise<Seat[]>;
  logger: Logger;
  /** The agent URLs of the live replicas, from every registration and heartbeat answer. */
  onReplicas?: (urls: string[]) => void;
  /** The controller refused this machine's certificate for good (revoked or removed); the link has stopped. */
  onRevoked?: (reason: string) => void;
}

export interface ControllerLink {
  /** Resolves after the first successful registration. */
  readonly registered: Promise<void>;
  /** Report the current seats now (after a seat was added or changed). */
  /** Reports the seat list: `seats` when given (already inspected), else inspected now. */
  reportSeats(seats?: Seat[]): Promise<void>;
  /** Hands worker reports to the controller; returns the ids it now holds. */
  submitWorkerReports(reports: { id: string; seatName: string; text: string; createdAtMs: number }[]): Promise<string[]>;
  /** Use the current certificate for new connections (after a renewal). */
  reconnect(): void;
  /** The gateway client and this agent's identity, for the worker endpoint's calls (node-agent/worker-link/); after a renewal, the reconnected one. */
  readonly gateway: Client<typeof AgentGatewayService>;
  readonly machine: string;
  readonly instanceId: string;
  stop(): void;
}

export function startControllerLink(o: ControllerLinkOptions): ControllerLink {
  const connect = () => createClient(AgentGatewayService, createGrpcTransport({ baseUrl: o.controllerUrl, nodeOptions: o.tls() }));
  let client = connect();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let heartbeatMs = 5000;
  let resolveRegistered!: () => void;
  const registered = new Promise<void>((r) => (resolveRegistered = r));

  const schedule = (fn: () => Promise<void>, ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => void fn(), ms);
    timer.unref?.();
  };

  const register = async (backoffMs = 200): Promise<void> => {
    try {
      const res = await client.register(
        create(RegisterRequestSchema, {
          machine: o.machine,
          endpoint: o.endpoint,
          agentToken: o.agentToken,
          capabilityVersion: CAPABILITY_VERSION,
          platform: o.platform,
          agentVersion: o.agentVersion,
          seats: await o.seats(),
          instanceId: o.instanceId,
        }),
        { timeoutMs: 5000 },
      );
      heartbeatMs = res.heartbeatIntervalMs || heartbeatMs;
      if (stopped) return;
      o.onReplicas?.(res.replicaAgentUrls);
      o.logger.info("registered with the controller", { controller: o.controllerUrl, machine: o.machine });
      resolveRegistered();
      schedule(heartbeat, heartbeatMs);
    } catch (e) {
      const err = FleetError.from(e);
      if (err.code === ErrorCode.MachineRevoked) {
        stopped = true;
        o.onRevoked?.(err.message);
        return;
      }
      o.logger.warn("registration failed; retrying", { error: (e as Error).message, retryInMs: backoffMs });
      schedule(() => register(Math.min(backoffMs * 2, 5000)), backoffMs);
    }
  };

  const heartbeat = async (): Promise<void> => {
    try {
      const res = await client.heartbeat(create(HeartbeatRequestSchema, { machine: o.machine, instanceId: o.instanceId }), { timeoutMs: 5000 });
      if (stopped) return;
      if (!res.known) return register();
      o.onReplicas?.(res.replicaAgentUrls);
      schedule(heartbeat, heartbeatMs);
    } catch (e) {
      o.logger.warn("heartbeat failed; registering again", { error: (e as Error).message });
      return register();
    }
  };

  void register();

  return {
    registered,
    get gateway() {
      return client;
    },
    machine: o.machine,
    instanceId: o.instanceId,
    async reportSeats(seats) {
      await registered;
      await client.reportSeats(create(ReportSeatsRequestSchema, { machine: o.machine, instanceId: o.instanceId, seats: seats ?? (await o.seats()) }), { timeoutMs: 5000 });
    },
    async submitWorkerReports(reports) {
      await registered;
      const res = await client.submitWorkerReports(
        create(SubmitWorkerReportsRequestSchema, {
          machine: o.machine,
          instanceId: o.instanceId,
          reports: reports.map((r) => create(WorkerReportSchema, { id: r.id, seatName: r.seatName, text: r.text, createdUnixMs: BigInt(r.createdAtMs) })),
        }),
        { timeoutMs: 5000 },
      );
      return res.acceptedIds;
    },
    reconnect() {
      client = connect();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
