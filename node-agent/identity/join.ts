/**
 * Joining a fleet with a join token: the token pins the fleet CA's fingerprint, so the agent
 * first reads the CA from the controller's certificate chain and compares it, and only then
 * sends the token, over TLS verified against that CA. The key pair is made here.
 */
import { connect as tlsConnect, type PeerCertificate } from "node:tls";
import { isIP } from "node:net";
import { create } from "@bufbuild/protobuf";
import { createClient, ConnectError } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { EnrollmentService, JoinRequestSchema } from "../../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { createCsr, fingerprintOfDer, generateKeyPair, toPem } from "../../shared/pki/x509.js";
import { GATEWAY_ALPN } from "../../shared/pki/alpn.js";
import { FleetError, ErrorCode, InvalidArgumentError } from "../../shared/errors.js";
import { saveIdentity, type AgentIdentity } from "./identity-files.js";
import { certificateNotAfter } from "../../shared/pki/x509.js";

const TOKEN = /^clankie-join\.[0-9a-f]{16}\.[A-Za-z0-9_-]{43}\.([0-9a-f]{64})$/;

export function agentUrlParts(url: string): { host: string; port: number; servername: string | undefined } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new InvalidArgumentError(
      `--controller must be the controller's agent URL (https://HOST:PORT), got ${JSON.stringify(url)}`,
    );
  }
  if (u.protocol !== "https:")
    throw new InvalidArgumentError(
      `the agent port is mutual TLS: --controller must be https://HOST:PORT (the agentUrl of clankie up / fleet enroll), got ${url}`,
    );
  const host = u.hostname.replace(/^\[|\]$/g, "");
  return { host, port: Number(u.port || 443), servername: isIP(host) ? undefined : host };
}

/** The CA certificate in the controller's chain whose sha256 is `fingerprint`. */
export async function fetchPinnedCa(url: string, fingerprint: string, timeoutMs = 10_000): Promise<string> {
  const { host, port, servername } = agentUrlParts(url);
  return new Promise<string>((resolve, reject) => {
    const socket = tlsConnect({
      host,
      port,
      servername,
      rejectUnauthorized: false,
      ALPNProtocols: [GATEWAY_ALPN],
      timeout: timeoutMs,
    });
    const fail = (e: Error) => {
      socket.destroy();
      reject(new FleetError(ErrorCode.AgentUnreachable, `cannot reach the controller at ${url}: ${e.message}`));
    };
    socket.once("timeout", () => fail(new Error("timed out")));
    socket.once("error", fail);
    socket.once("secureConnect", () => {
      const seen = new Set<string>();
      let c: PeerCertificate | undefined = socket.getPeerCertificate(true);
      let found: string | undefined;
      while (c?.raw && !seen.has(c.fingerprint256)) {
        seen.add(c.fingerprint256);
        if (fingerprintOfDer(c.raw) === fingerprint) found = toPem(c.raw, "CERTIFICATE");
        c = (c as PeerCertificate & { issuerCertificate?: PeerCertificate }).issuerCertificate;
      }
      socket.destroy();
      if (found) resolve(found);
      else
        reject(
          new FleetError(
            ErrorCode.Unauthenticated,
            `the server at ${url} does not present the fleet CA this join token names (sha256 ${fingerprint.slice(0, 16)}…): refusing to send the token`,
          ),
        );
    });
  });
}

/**
 * Joins through the first of `controllerUrls` that answers (ADR 0038): a replica that cannot be
 * reached is skipped; any other failure (a CA that is not the token's, a refused token) ends the
 * join, since another replica of the same fleet would answer the same. The token is only ever
 * sent over TLS verified against the CA the token pins.
 */
export async function joinFleet(o: {
  stateDir: string;
  controllerUrl: string | readonly string[];
  token: string;
  agentVersion: string;
}): Promise<AgentIdentity> {
  const controllerUrls = typeof o.controllerUrl === "string" ? [o.controllerUrl] : [...o.controllerUrl];
  if (controllerUrls.length === 0)
    throw new InvalidArgumentError("joining needs --controller URL (the agentUrl of a controller replica)");
  let last: unknown;
  for (const url of controllerUrls) {
    try {
      return await joinThrough({ ...o, controllerUrl: url, controllerUrls });
    } catch (e) {
      last = e;
      if (!(e instanceof FleetError && e.code === ErrorCode.AgentUnreachable)) throw e;
    }
  }
  throw last;
}

async function joinThrough(o: {
  stateDir: string;
  controllerUrl: string;
  controllerUrls: string[];
  token: string;
  agentVersion: string;
}): Promise<AgentIdentity> {
  const m = TOKEN.exec(o.token.trim());
  if (!m)
    throw new InvalidArgumentError(
      "this is not a clankie join token (expected clankie-join.<id>.<secret>.<ca sha256>; get one with clankie fleet enroll NAME)",
    );
  const caPem = await fetchPinnedCa(o.controllerUrl, m[1]!);
  const { keys, privateKeyPem } = await generateKeyPair();
  // The CSR's subject is a placeholder: the controller names the certificate after the token's machine.
  const csrPem = await createCsr("joining", keys);
  const client = createClient(
    EnrollmentService,
    // One call: the session closes right after it, not 15 min later (Connect's default), which
    // kept a third TLS session per newly joined agent on the controller (issue 36).
    createGrpcTransport({ baseUrl: o.controllerUrl, nodeOptions: { ca: [caPem] }, idleConnectionTimeoutMs: 1_000 }),
  );
  let res;
  try {
    res = await client.join(
      create(JoinRequestSchema, { token: o.token.trim(), csrPem, agentVersion: o.agentVersion }),
      { timeoutMs: 15_000 },
    );
  } catch (e) {
    const err = ConnectError.from(e);
    throw new FleetError(
      ErrorCode.Unauthenticated,
      `the controller refused to enroll this agent: ${err.rawMessage.replace(/^unauthenticated: /, "")}`,
      { cause: e },
    );
  }
  // The replica that answered first, then the others given: a restart tries them in this order.
  const controllerUrls = [...new Set([o.controllerUrl, ...o.controllerUrls])];
  const identity = {
    machine: res.machine,
    fleetId: res.fleetId,
    controllerUrl: o.controllerUrl,
    controllerUrls,
    privateKeyPem,
    certificatePem: res.certificatePem,
    caCertificatePem: caPem,
  };
  saveIdentity(o.stateDir, identity);
  return { ...identity, notAfter: certificateNotAfter(res.certificatePem) };
}
