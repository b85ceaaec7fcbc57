/** FleetService: the owner enrolls, lists, revokes and removes machines. */
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  FleetMachineSchema,
  type FleetService,
  IssueJoinTokenResponseSchema,
  ListFleetResponseSchema,
  RemoveMachineResponseSchema,
  RevokeMachineResponseSchema,
} from "../../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { FleetError, InvalidArgumentError } from "../../shared/errors.js";
import type { Logger } from "../../shared/logger.js";
import { machines } from "../db/schema.js";
import type { Db } from "../db/open.js";
import type { Registry } from "../nodes/registry.js";
import type { FleetAuthority } from "./authority.js";
import { DEFAULT_JOIN_TTL_MS, issueJoinToken } from "./join-tokens.js";
import { latestCertificates, revokeMachineCertificates } from "./machine-certs.js";
import { removeMachine } from "./removals.js";
import { liveReplicaAgentUrls } from "./replicas.js";

export interface FleetServiceDeps {
  db: Db;
  authority: FleetAuthority;
  registry: Registry;
  now: () => Date;
  agentUrl: () => string;
  /** Cuts this replica's live sockets of a machine; returns how many. */
  cut: (machine: string) => number;
  logger: Logger;
}

export function createFleetService(d: FleetServiceDeps): ServiceImpl<typeof FleetService> {
  // Errors are typed once, at the service boundary (fleetErrorBoundary with databaseFailure).
  return {
    async issueJoinToken(req) {
      const ttl = req.ttlMs === 0n ? DEFAULT_JOIN_TTL_MS : Number(req.ttlMs);
      const t = await issueJoinToken(d.db, req.machine, ttl, d.authority.ca.fingerprint, d.now());
      d.logger.info("join token issued", { machine: req.machine, expiresAt: t.expiresAt.toISOString() });
      // Every live replica, this one first: the agent joins through any that answers (ADR 0038).
      const replicaAgentUrls = [...new Set([d.agentUrl(), ...(await liveReplicaAgentUrls(d.db))])];
      return create(IssueJoinTokenResponseSchema, {
        machine: req.machine,
        token: t.token,
        expiresUnixMs: BigInt(t.expiresAt.getTime()),
        agentUrl: d.agentUrl(),
        fleetId: d.authority.ca.fleetId,
        replicaAgentUrls,
      });
    },
    async listFleet() {
      const certs = await latestCertificates(d.db);
      const rows = new Map((await d.registry.machines()).map((m) => [m.name, m]));
      const list = certs.map((c) => {
        const m = rows.get(c.machine);
        const status = c.revokedAt ? "revoked" : !m ? "enrolled" : d.registry.isOnline(m) ? "online" : "offline";
        return create(FleetMachineSchema, {
          name: c.machine,
          status,
          agentVersion: m?.agentVersion ?? "",
          certificateNotAfterUnixMs: BigInt(c.notAfter.getTime()),
          lastSeenUnixMs: BigInt(m && m.lastSeenAt.getTime() > 0 ? m.lastSeenAt.getTime() : 0),
          certificateSerial: c.serial,
          platform: m?.platform ?? "",
        });
      });
      return create(ListFleetResponseSchema, { machines: list, fleetId: d.authority.ca.fleetId });
    },
    async revokeMachine(req) {
      if (!req.machine) throw new InvalidArgumentError("name the machine to revoke");
      const revoked = await revokeMachineCertificates(d.db, req.machine, d.now());
      // Its seats are offline at once: a delivery to them is a definite not-sent.
      await d.db
        .update(machines)
        .set({ lastSeenAt: new Date(0) })
        .where(eq(machines.name, req.machine));
      const cut = d.cut(req.machine);
      d.registry.emit("changed");
      d.logger.warn("machine revoked", { machine: req.machine, certificates: revoked, connectionsCut: cut });
      if (revoked === 0 && !(await latestCertificates(d.db)).some((c) => c.machine === req.machine)) {
        throw new FleetError("not_found", `no machine named ${req.machine} ever enrolled`);
      }
      return create(RevokeMachineResponseSchema, { revokedCertificates: revoked, connectionsCut: cut });
    },
    async removeMachine(req) {
      const removed = await removeMachine(d.db, d.registry, req.machine);
      // Other replicas cut theirs at their next revocation poll: the certificate is no longer on record.
      const cut = d.cut(req.machine);
      d.registry.emit("changed");
      const { seatIds, was } = removed;
      d.logger.warn("machine removed", { machine: req.machine, was, seats: seatIds.length, connectionsCut: cut });
      return create(RemoveMachineResponseSchema, { machine: req.machine, seatIds, was, connectionsCut: cut });
    },
  };
}
