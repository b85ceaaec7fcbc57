/**
 * The agent's fleet identity on disk, under <state>/identity: its private key (made here,
 * mode 0600, never sent anywhere), its machine certificate, the fleet CA it pins, and
 * where the fleet's gateway is: the URL it joined through and the replicas it learned since
 * (ADR 0038), so a restart works while the first of them is dead.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileDurably } from "../../shared/durable-file.js";
import { certificateNotAfter } from "../../shared/pki/x509.js";

export interface AgentIdentity {
  machine: string;
  fleetId: string;
  /** The URL first given (joined through, or the last --controller). */
  controllerUrl: string;
  /** Every gateway URL worth trying, best first; includes controllerUrl. */
  controllerUrls: string[];
  privateKeyPem: string;
  certificatePem: string;
  caCertificatePem: string;
  notAfter: Date;
}

interface IdentityRecord {
  machine: string;
  fleetId: string;
  controllerUrl: string;
  /** Absent in records written before ADR 0038. */
  controllerUrls?: string[];
}

export function identityDir(stateDir: string): string {
  return join(stateDir, "identity");
}

export function loadIdentity(stateDir: string): AgentIdentity | undefined {
  const dir = identityDir(stateDir);
  const files = ["identity.json", "key.pem", "cert.pem", "ca.pem"].map((f) => join(dir, f));
  if (!files.every((f) => existsSync(f))) return undefined;
  const [rec, key, cert, ca] = files.map((f) => readFileSync(f, "utf8")) as [string, string, string, string];
  const r = JSON.parse(rec) as IdentityRecord;
  return {
    ...r,
    controllerUrls: r.controllerUrls?.length ? r.controllerUrls : [r.controllerUrl],
    privateKeyPem: key,
    certificatePem: cert,
    caCertificatePem: ca,
    notAfter: certificateNotAfter(cert),
  };
}

/** Key and certificate are written before the record, so a half-written identity is never loaded. */
export function saveIdentity(
  stateDir: string,
  id: Omit<AgentIdentity, "notAfter" | "controllerUrls"> & { controllerUrls?: string[] },
): void {
  const dir = identityDir(stateDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileDurably(join(dir, "key.pem"), id.privateKeyPem, 0o600);
  writeFileDurably(join(dir, "cert.pem"), id.certificatePem, 0o644);
  writeFileDurably(join(dir, "ca.pem"), id.caCertificatePem, 0o644);
  writeIdentityRecord(stateDir, id);
}

/** The record alone (which controllers to try): rewritten when the fleet names other replicas. */
export function writeIdentityRecord(
  stateDir: string,
  id: Pick<AgentIdentity, "machine" | "fleetId" | "controllerUrl"> & { controllerUrls?: string[] },
): void {
  const dir = identityDir(stateDir);
  const rec: IdentityRecord = {
    machine: id.machine,
    fleetId: id.fleetId,
    controllerUrl: id.controllerUrl,
    controllerUrls: id.controllerUrls ?? [id.controllerUrl],
  };
  writeFileDurably(join(dir, "identity.json"), JSON.stringify(rec, null, 2) + "\n", 0o644);
}
