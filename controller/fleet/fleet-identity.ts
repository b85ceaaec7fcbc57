/**
 * The controller's side of fleet identity, started once per replica: the shared CA, this
 * replica's server certificate, the agent port (mutual TLS), the reverse links, and the
 * services agents and the owner call for enrollment, renewal and revocation.
 */
import { isIP } from "node:net";
import { hostname, networkInterfaces } from "node:os";
import type { Http2ServerRequest } from "node:http2";
import { createContextValues } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { AgentGatewayService } from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { CertificateService, EnrollmentService } from "../../shared/gen/clankie/fleet/v1/fleet_pb.js";
import type { Logger } from "../../shared/logger.js";
import type { Db } from "../db/open.js";
import type { Registry } from "../nodes/registry.js";
import { createAgentGatewayService } from "../services/agent-gateway-service.js";
import { gatewayTunnelServer } from "./gateway-tunnel.js";
import type { PipelineDeps } from "../delivery/pipeline.js";
import { fleetErrorBoundary } from "../../shared/rpc/error-boundary.js";
import { FleetAuthority } from "./authority.js";
import { loadOrCreateCa } from "./ca.js";
import { listenForAgents, type AgentListener } from "./agent-listener.js";
import { peerIdentityKey, type PeerIdentity } from "./peer-identity.js";
import { ReverseLinks } from "./reverse-links.js";
import { advertiseAgentUrl, cachedReplicaAgentUrls } from "./replicas.js";
import { RPC_READ_MAX_BYTES } from "../../shared/rpc/read-limits.js";
import { createCertificateService, createEnrollmentService } from "./enrollment-service.js";
import { databaseFailure } from "../db/error-text.js";

export interface FleetIdentityOptions {
  db: Db;
  registry: Registry;
  instanceId: string;
  host: string;
  port: number;
  /** The host agents dial when `host` is a wildcard; default: this machine's first external address. */
  advertiseHost: string | undefined;
  /** More names for the server certificate (a load balancer's). */
  tlsNames?: string[] | undefined;
  caPassphrase: string | undefined;
  machineCertTtlMs: number | undefined;
  now: () => Date;
  logger: Logger;
  /** `pipeline` is read per call: the pipeline is built after the links it delivers through. */
  reports: { onChange: () => void; pipeline?: () => PipelineDeps | undefined };
}

export interface FleetIdentity {
  readonly authority: FleetAuthority;
  readonly links: ReverseLinks;
  readonly listener: AgentListener;
  /** The https address agents dial to reach this replica. */
  readonly agentUrl: string;
  /** The server certificate (and key) of this replica, for the leads' and owner's TLS off loopback. */
  readonly serverCertificatePem: string;
  readonly serverPrivateKeyPem: string;
  close(): Promise<void>;
}

export async function startFleetIdentity(o: FleetIdentityOptions): Promise<FleetIdentity> {
  const ca = await loadOrCreateCa(o.db, o.caPassphrase);
  const authority = new FleetAuthority(o.db, ca, o.now, o.machineCertTtlMs);
  const names = serverNames(o.host, o.advertiseHost, o.tlsNames);
  const server = await authority.serverCertificate(names.dns, names.ips);
  // A call balanced here for a machine online through another replica waits for its link.
  const links = new ReverseLinks({
    expected: async (machine) => {
      const row = await o.registry.machine(machine);
      return !!row && o.registry.isOnline(row);
    },
  });
  // Silent links are cut only once the heartbeat interval has grown past the base (registry.isOnline).
  const linkPings = links.startPings(undefined, () => o.registry.judgedIntervalMs > o.registry.baseHeartbeatIntervalMs);

  const identities = new WeakMap<Http2ServerRequest, PeerIdentity>();
  const gatewayImpl = createAgentGatewayService(
    o.registry,
    o.logger.child({ component: "gateway" }),
    {
      db: o.db,
      now: o.now,
      onChange: o.reports.onChange,
      get pipeline() {
        return o.reports.pipeline?.();
      },
    },
    { agentUrls: cachedReplicaAgentUrls(o.db) },
  );
  const gatewayInterceptors = [fleetErrorBoundary(databaseFailure)];
  // The agent's gateway calls on its reverse link, so it needs no second TLS session (ADR 0042).
  links.serveGatewayTunnel(
    gatewayTunnelServer({
      service: AgentGatewayService,
      impl: gatewayImpl,
      interceptors: gatewayInterceptors,
      readMaxBytes: RPC_READ_MAX_BYTES.gateway,
      logger: o.logger.child({ component: "gateway-tunnel" }),
    }),
  );
  const gateway = connectNodeAdapter({
    routes: (router) => {
      router.service(AgentGatewayService, gatewayImpl, { readMaxBytes: RPC_READ_MAX_BYTES.gateway });
      router.service(
        CertificateService,
        createCertificateService(authority, o.logger.child({ component: "fleet-ca" })),
        { readMaxBytes: RPC_READ_MAX_BYTES.enrollment },
      );
    },
    // Read bounds for the agent port too (issue 11): without them connect-node reads up to 4 GiB per message.
    readMaxBytes: RPC_READ_MAX_BYTES.gateway,
    contextValues: (req) => createContextValues().set(peerIdentityKey, identities.get(req as Http2ServerRequest)),
    interceptors: gatewayInterceptors,
  });
  // The one route a connection without a certificate reaches: its body bound is the smallest.
  const enrollment = connectNodeAdapter({
    readMaxBytes: RPC_READ_MAX_BYTES.enrollment,
    routes: (router) =>
      router.service(
        EnrollmentService,
        createEnrollmentService(authority, o.logger.child({ component: "enrollment" })),
        { readMaxBytes: RPC_READ_MAX_BYTES.enrollment },
      ),
    interceptors: [fleetErrorBoundary(databaseFailure)],
  });

  const listener = await listenForAgents({
    host: o.host,
    port: o.port,
    caPem: ca.certificatePem,
    certificatePem: server.certificatePem,
    privateKeyPem: server.privateKeyPem,
    db: o.db,
    logger: o.logger.child({ component: "agent-port" }),
    gateway: (req, res, peer) => {
      identities.set(req, peer);
      gateway(req, res);
    },
    enrollment: (req, res) => enrollment(req, res),
    onReverse: (socket, peer) => links.accept(socket, peer),
  });
  const agentHost = names.advertised.includes(":") ? `[${names.advertised}]` : names.advertised;
  const agentUrl = `https://${agentHost}:${listener.port}`;
  await advertiseAgentUrl(o.db, o.instanceId, agentUrl);
  o.logger.info("agent port listening", { agentUrl, fleetId: ca.fleetId });
  return {
    authority,
    links,
    listener,
    agentUrl,
    serverCertificatePem: server.certificatePem,
    serverPrivateKeyPem: server.privateKeyPem,
    async close() {
      linkPings.stop();
      links.closeAll();
      await listener.close();
    },
  };
}

const WILDCARDS = new Set(["0.0.0.0", "::", ""]);

/** What the server certificate names: the listen host, or every local address for a wildcard. */
export function serverNames(
  host: string,
  advertiseHost: string | undefined,
  tlsNames: string[] = [],
): { dns: string[]; ips: string[]; advertised: string } {
  const dns = new Set<string>(["localhost"]);
  const ips = new Set<string>();
  const add = (h: string) => (isIP(h) ? ips.add(h) : dns.add(h));
  let advertised = host;
  if (WILDCARDS.has(host)) {
    add(hostname());
    for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) ips.add(a.address);
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && !a.internal && a.family === "IPv4");
    advertised = external?.address ?? "127.0.0.1";
  } else {
    add(host);
    ips.add("127.0.0.1");
  }
  for (const n of tlsNames) add(n);
  if (advertiseHost) {
    add(advertiseHost);
    advertised = advertiseHost;
  }
  return { dns: [...dns], ips: [...ips], advertised };
}
