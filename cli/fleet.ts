/** `clankie fleet enroll|list|revoke|remove|deploy`: the owner's view of the fleet's identities. */
import { create } from "@bufbuild/protobuf";
import {
  IssueJoinTokenRequestSchema,
  ListFleetRequestSchema,
  RevokeMachineRequestSchema,
} from "../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { InvalidArgumentError } from "../shared/errors.js";
import { ownerClients } from "../shared/owner-client.js";
import { emit, table, type OutputOptions } from "./output.js";
import type { FleetFlags } from "./fleet-flags.js";

export type { FleetFlags } from "./fleet-flags.js";

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "15m", "90s", "2h", "1d" or plain milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new InvalidArgumentError(`--ttl must look like 15m, 90s, 2h or 1d, got ${JSON.stringify(text)}`);
  return Number(m[1]) * UNITS[m[2] ?? "ms"]!;
}

const USAGE =
  "usage: clankie fleet enroll NAME [--ttl 15m] | fleet list | fleet revoke NAME | fleet remove NAME [--yes]" +
  " | fleet deploy SSH_TARGET --machine NAME";

export async function fleetCommand(args: string[], f: FleetFlags, out: OutputOptions): Promise<number> {
  const [sub, name] = args;
  if (sub === "remove") {
    const { fleetRemove } = await import("./fleet-remove.js");
    return fleetRemove(name, f, out);
  }
  if (sub === "deploy") {
    const { fleetDeploy } = await import("./fleet-deploy.js");
    return fleetDeploy(name, f, out);
  }
  const { fleet } = ownerClients(f.stateDir, f.controller);
  switch (sub) {
    case "enroll": {
      if (!name) throw new InvalidArgumentError("usage: clankie fleet enroll NAME [--ttl 15m]");
      const res = await fleet.issueJoinToken(
        create(IssueJoinTokenRequestSchema, { machine: name, ttlMs: f.ttl ? BigInt(parseDuration(f.ttl)) : 0n }),
      );
      const expiresAt = new Date(Number(res.expiresUnixMs)).toISOString();
      // Every live replica's URL (an older controller names only its own): the agent tries each.
      const agentUrls = res.replicaAgentUrls.length ? res.replicaAgentUrls : [res.agentUrl];
      emit(
        out,
        { machine: res.machine, token: res.token, expiresAt, agentUrl: res.agentUrl, agentUrls, fleetId: res.fleetId },
        () =>
          [
            `join token for ${res.machine} (single use, expires ${expiresAt}):`,
            `  ${res.token}`,
            "",
            "On that machine:",
            `  clankie agent --controller ${agentUrls.join(",")} --join -     (paste the token on stdin)`,
          ].join("\n"),
      );
      return 0;
    }
    case "list": {
      const res = await fleet.listFleet(create(ListFleetRequestSchema, {}));
      const rows = res.machines.map((m) => ({
        machine: m.name,
        status: m.status,
        agentVersion: m.agentVersion,
        platform: m.platform,
        certExpires: new Date(Number(m.certificateNotAfterUnixMs)).toISOString(),
        lastSeen: m.lastSeenUnixMs ? new Date(Number(m.lastSeenUnixMs)).toISOString() : "",
      }));
      emit(out, { fleetId: res.fleetId, machines: rows }, () =>
        table(
          rows,
          ["machine", "status", "agentVersion", "platform", "certExpires", "lastSeen"],
          "no machines yet: add one with `clankie fleet deploy USER@HOST --machine NAME`, or `clankie fleet enroll NAME` and `clankie agent --join -` on it",
        ),
      );
      return 0;
    }
    case "revoke": {
      if (!name) throw new InvalidArgumentError("usage: clankie fleet revoke NAME");
      const res = await fleet.revokeMachine(create(RevokeMachineRequestSchema, { machine: name }));
      emit(
        out,
        { machine: name, revokedCertificates: res.revokedCertificates, connectionsCut: res.connectionsCut },
        () =>
          `${name} revoked: ${res.revokedCertificates} certificate(s), ${res.connectionsCut} live connection(s) cut here; other replicas cut theirs within seconds`,
      );
      return 0;
    }
    default:
      throw new InvalidArgumentError(USAGE);
  }
}
