/**
 * The agent's link to the fleet's gateway: register (with backoff until a replica answers),
 * heartbeat, and report the seat list whenever it changes. A heartbeat the controller does not
 * know triggers a fresh registration, so a controller restart heals by itself. Every call goes
 * over mutual TLS with the agent's machine certificate; the controller's is pinned to the
 * fleet CA. Each answer names the live replicas, which the reverse links follow.
 *
 * Any replica serves these calls (ADR 0038): they all write the same journal, and each call is
 * idempotent (a registration replaces the machine's row, a heartbeat touches it, a seat report
 * replaces the seat list, a worker report is kept once by its id). So a call that gets no answer
 * from one replica is sent to the next at once, instead of waiting out a backoff on a replica
 * that died: the agent's liveness never depends on the replica it joined through. A replica's
 * refusal (revoked, invalid, unknown instance) is an answer, the same on every replica, and is
 * not sent elsewhere. A typed machine_revoked refusal (issue 37) ends the link for good.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
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
import type { GatewayTunnels } from "./gateway-tunnel.js";

export interface ControllerLinkOptions {
  /**
   * The gateway URLs worth trying, best first, asked before every attempt: the replicas this
   * agent holds a live reverse link to, then the live replicas the fleet named, then the ones
   * it was started with. Never empty.
   */
  controllerUrls: () => string[];
  /** The current certificate, key and pinned CA (they change when the certificate is renewed). */
  tls: () => TlsMaterial;
  /** Carries calls to a replica on its reverse link while it is up (gateway-tunnel.ts); absent, all go direct. */
  tunnels?: Pick<GatewayTunnels, "transport">;
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
  /** Reports the seat list: `seats` when given (already inspected), else inspected now. */
  reportSeats(seats?: Seat[]): Promise<void>;
  /** Hands worker reports to the controller; returns the ids it now holds. */
  submitWorkerReports(
    reports: { id: string; seatName: string; text: string; createdAtMs: number }[],
  ): Promise<string[]>;
  /** Use the current certificate for new connections (after a renewal). */
  reconnect(): void;
  /** The gateway client of the replica that answered last, for the worker endpoint's calls (node-agent/worker-link/); never retried elsewhere by this link. */
  readonly gateway: Client<typeof AgentGatewayService>;
  /** The gateway URL that answered last. */
  readonly currentUrl: string;
  readonly machine: string;
  readonly instanceId: string;
  stop(): void;
}

/** A direct gateway session unused this long closes (a tunnel carries the calls meanwhile). */
const DIRECT_IDLE_MS = 5_000;

/** Answers that every replica would give alike: sending the call elsewhere cannot change them. */
const FINAL = new Set<Code>([
  Code.InvalidArgument,
  Code.FailedPrecondition,
  Code.PermissionDenied,
  Code.Unauthenticated,
  Code.NotFound,
  Code.AlreadyExists,
]);

/** Whether a failed call says nothing about the fleet, only about the replica it went to. */
export function triesNextReplica(e: unknown): boolean {
  return !(e instanceof ConnectError && FINAL.has(e.code));
}

export function startControllerLink(o: ControllerLinkOptions): ControllerLink {
  const clients = new Map<string, Client<typeof AgentGatewayService>>();
  const clientFor = (url: string) => {
    let c = clients.get(url);
    if (!c) {
      // Idle soon: once the reverse link's tunnel carries the calls, this session only holds memory
      // on both ends (issue 36: a second TLS session per agent was a third of the controller's RSS).
      const direct = createGrpcTransport({
        baseUrl: url,
        nodeOptions: o.tls(),
        idleConnectionTimeoutMs: DIRECT_IDLE_MS,
      });
      clients.set(url, (c = createClient(AgentGatewayService, o.tunnels?.transport(url, direct) ?? direct)));
    }
    return c;
  };
  let current = o.controllerUrls()[0]!;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let heartbeatMs = 5000;
  let resolveRegistered!: () => void;
  const registered = new Promise<void>((r) => (resolveRegistered = r));

  /** The last replica that answered first, then the others in the caller's order. */
  const candidates = () => [...new Set([current, ...o.controllerUrls()])];

  /**
   * One call, sent to the next replica at once when a replica gives no answer. Throws the last
   * failure when none answered, or a replica's final refusal as soon as one gives it.
   */
  const anyReplica = async <T>(
    what: string,
    call: (c: Client<typeof AgentGatewayService>, lastTry: boolean) => Promise<T>,
  ): Promise<T> => {
    let last: unknown;
    const urls = candidates();
    for (const [i, url] of urls.entries()) {
      if (stopped) break;
      try {
        const res = await call(clientFor(url), i === urls.length - 1);
        if (url !== current)
          o.logger.info("the gateway moved to another replica", { from: current, to: url, call: what });
        current = url;
        return res;
      } catch (e) {
        last = e;
        if (!triesNextReplica(e)) throw e;
        o.logger.debug("a replica gave no answer; trying the next", { url, call: what, error: (e as Error).message });
      }
    }
    throw last ?? new FleetError(ErrorCode.Unavailable, "the link has stopped");
  };

  /** `ms` less a random part of up to `spread` of it. */
  const jittered = (ms: number, spread: number) => Math.round(ms * (1 - spread * Math.random()));

  const schedule = (fn: () => Promise<void>, ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => void fn(), ms);
    timer.unref?.();
  };

  const register = async (backoffMs = 200): Promise<void> => {
    try {
      const seats = await o.seats();
      const res = await anyReplica("register", (c) =>
        c.register(
          create(RegisterRequestSchema, {
            machine: o.machine,
            endpoint: o.endpoint,
            agentToken: o.agentToken,
            capabilityVersion: CAPABILITY_VERSION,
            platform: o.platform,
            agentVersion: o.agentVersion,
            seats,
            instanceId: o.instanceId,
          }),
          { timeoutMs: 5000 },
        ),
      );
      heartbeatMs = res.heartbeatIntervalMs || heartbeatMs;
      if (stopped) return;
      o.onReplicas?.(res.replicaAgentUrls);
      o.logger.info("registered with the controller", { controller: current, machine: o.machine });
      resolveRegistered();
      // The first heartbeat at a random point of the interval: agents that registered together
      // (a restarted controller's fleet) do not heartbeat together ever after.
      schedule(heartbeat, jittered(heartbeatMs, 0.5));
    } catch (e) {
      const err = FleetError.from(e);
      if (err.code === ErrorCode.MachineRevoked) {
        stopped = true;
        o.onRevoked?.(err.message);
        return;
      }
      o.logger.warn("registration failed on every known replica; retrying", {
        error: (e as Error).message,
        replicas: candidates(),
        retryInMs: backoffMs,
      });
      // Jittered: a fleet whose controller restarted does not come back as one wave every backoff.
      schedule(() => register(Math.min(backoffMs * 2, 5000)), jittered(backoffMs, 0.5));
    }
  };

  const heartbeat = async (): Promise<void> => {
    try {
      // A replica that does not answer within one interval is left for the next one, so the
      // machine's last heartbeat is never more than about two intervals old (offline is three).
      // The last one left gets the full 5 s: a busy lone controller is not made to take every
      // agent's registration again on top of its load.
      const quick = Math.min(5000, Math.max(1000, heartbeatMs));
      const res = await anyReplica("heartbeat", (c, lastTry) =>
        c.heartbeat(create(HeartbeatRequestSchema, { machine: o.machine, instanceId: o.instanceId }), {
          timeoutMs: lastTry ? 5000 : quick,
        }),
      );
      if (stopped) return;
      if (!res.known) return register();
      // The interval grows with the fleet (issue 36); 0 is an older controller's answer.
      heartbeatMs = res.heartbeatIntervalMs || heartbeatMs;
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
      return clientFor(current);
    },
    get currentUrl() {
      return current;
    },
    machine: o.machine,
    instanceId: o.instanceId,
    async reportSeats(seats) {
      await registered;
      const wire = seats ?? (await o.seats());
      await anyReplica("report seats", (c) =>
        c.reportSeats(create(ReportSeatsRequestSchema, { machine: o.machine, instanceId: o.instanceId, seats: wire }), {
          timeoutMs: 5000,
        }),
      );
    },
    async submitWorkerReports(reports) {
      await registered;
      const req = create(SubmitWorkerReportsRequestSchema, {
        machine: o.machine,
        instanceId: o.instanceId,
        reports: reports.map((r) =>
          create(WorkerReportSchema, {
            id: r.id,
            seatName: r.seatName,
            text: r.text,
            createdUnixMs: BigInt(r.createdAtMs),
          }),
        ),
      });
      // Safe to send to another replica: the controller keeps a report once by its id.
      const res = await anyReplica("worker reports", (c) => c.submitWorkerReports(req, { timeoutMs: 5000 }));
      return res.acceptedIds;
    },
    reconnect() {
      clients.clear();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
