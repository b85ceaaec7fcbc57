/**
 * How the CLI's commands and the lead's bridge reach the running controller as its owner: its record
 * and the owner token in the state dir (controller-record.ts).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { OwnerService } from "./gen/clankie/fleet/v1/owner_pb.js";
import { StatusService } from "./gen/clankie/fleet/v1/status_pb.js";
import { Health } from "./gen/grpc/health/v1/health_pb.js";
import { FleetService } from "./gen/clankie/fleet/v1/fleet_pb.js";
import { bearerHeaderInterceptor } from "./rpc/bearer-auth.js";
import { FleetError, ErrorCode } from "./errors.js";
import { readControllerRecord, readOwnerToken } from "./controller-record.js";

export interface OwnerClients {
  url: string;
  owner: Client<typeof OwnerService>;
  status: Client<typeof StatusService>;
  health: Client<typeof Health>;
  fleet: Client<typeof FleetService>;
}

export function controllerUrl(stateDir: string, override: string | undefined): string {
  const url = override ?? readControllerRecord(stateDir)?.url;
  if (!url)
    throw new FleetError(
      ErrorCode.ControllerUnreachable,
      `no controller is running for state dir ${stateDir} (no controller.json); start one with 'clankie up' or pass --controller URL`,
    );
  return url;
}

export function ownerClients(stateDir: string, override?: string): OwnerClients {
  const url = controllerUrl(stateDir, override);
  const token = readOwnerToken(stateDir);
  if (!token) throw new FleetError(ErrorCode.Unauthenticated, `no owner token in ${stateDir}/owner.token`);
  // Off loopback the controller's port is TLS with a certificate from the fleet CA.
  const caFile = join(stateDir, "fleet-ca.pem");
  const nodeOptions =
    url.startsWith("https:") && existsSync(caFile) ? { ca: [readFileSync(caFile, "utf8")] } : undefined;
  const transport = createGrpcTransport({
    baseUrl: url,
    interceptors: [bearerHeaderInterceptor(() => token)],
    ...(nodeOptions ? { nodeOptions } : {}),
  });
  return {
    url,
    owner: createClient(OwnerService, transport),
    status: createClient(StatusService, transport),
    health: createClient(Health, transport),
    fleet: createClient(FleetService, transport),
  };
}
