/**
 * What the fleet CA signs: machine certificates for a redeemed join token or a renewal,
 * and each replica's own server certificate. A machine's name comes from the join token
 * (or the certificate being renewed), never from the CSR's subject.
 */
import type { Db } from "../db/open.js";
import type { FleetCa } from "./ca.js";
import { redeemJoinToken } from "./join-tokens.js";
import { recordCertificate } from "./machine-certs.js";
import { generateKeyPair, issueCertificate, verifiedCsrKey } from "../../shared/pki/x509.js";
import { InvalidArgumentError } from "../../shared/errors.js";

export const DEFAULT_MACHINE_CERT_TTL_MS = 24 * 3_600_000;
const SERVER_CERT_TTL_MS = 30 * 86_400_000;

export interface IssuedMachineCert {
  machine: string;
  certificatePem: string;
  serial: string;
  notAfter: Date;
}

export class FleetAuthority {
  constructor(
    private readonly db: Db,
    readonly ca: FleetCa,
    private readonly now: () => Date,
    readonly machineCertTtlMs: number = DEFAULT_MACHINE_CERT_TTL_MS,
  ) {}

  /** Redeems the token and signs the CSR in one transaction: a failure leaves the token unused. */
  async join(token: string, csrPem: string): Promise<IssuedMachineCert> {
    const key = await csrKey(csrPem);
    return this.db.transaction(async (tx) => {
      const at = this.now();
      const machine = await redeemJoinToken(tx, token, at);
      const cert = await this.sign(machine, key, at);
      await recordCertificate(tx, cert.serial, machine, cert.notAfter, at);
      return cert;
    });
  }

  async renew(machine: string, csrPem: string): Promise<IssuedMachineCert> {
    const key = await csrKey(csrPem);
    const at = this.now();
    const cert = await this.sign(machine, key, at);
    await recordCertificate(this.db, cert.serial, machine, cert.notAfter, at);
    return cert;
  }

  private async sign(machine: string, key: CryptoKey, at: Date): Promise<IssuedMachineCert> {
    const issued = await issueCertificate({
      ca: this.ca,
      subjectKey: key,
      commonName: machine,
      fleetId: this.ca.fleetId,
      usage: "client",
      notAfter: new Date(at.getTime() + this.machineCertTtlMs),
    });
    return { machine, ...issued };
  }

  /** A fresh key and certificate for this replica's agent listener (kept in memory only). */
  async serverCertificate(
    dnsNames: string[],
    ipAddresses: string[],
  ): Promise<{ certificatePem: string; privateKeyPem: string; notAfter: Date }> {
    const { keys, privateKeyPem } = await generateKeyPair();
    const issued = await issueCertificate({
      ca: this.ca,
      subjectKey: keys.publicKey,
      commonName: dnsNames[0] ?? ipAddresses[0] ?? "controller",
      fleetId: this.ca.fleetId,
      usage: "server",
      dnsNames,
      ipAddresses,
      notAfter: new Date(Date.now() + SERVER_CERT_TTL_MS),
    });
    return { certificatePem: issued.certificatePem, privateKeyPem, notAfter: issued.notAfter };
  }
}

async function csrKey(csrPem: string): Promise<CryptoKey> {
  if (csrPem.length > 16_384) throw new InvalidArgumentError("the CSR is larger than 16 KiB");
  try {
    return await verifiedCsrKey(csrPem);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
}
