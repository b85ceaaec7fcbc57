/**
 * Certificates and CSRs for the fleet's identities, on @peculiar/x509 over Node's WebCrypto
 * (ADR 0020). Keys are ECDSA P-256: small certificates and a cheap TLS handshake.
 */
import "reflect-metadata";
import { createHash, webcrypto, X509Certificate as NodeX509 } from "node:crypto";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

export interface KeyPairPem {
  privateKeyPem: string;
  keys: CryptoKeyPair;
}

export async function generateKeyPair(): Promise<KeyPairPem> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ["sign", "verify"])) as unknown as CryptoKeyPair;
  const pkcs8 = Buffer.from(
    await webcrypto.subtle.exportKey("pkcs8", keys.privateKey as unknown as webcrypto.CryptoKey),
  );
  return { privateKeyPem: toPem(pkcs8, "PRIVATE KEY"), keys };
}

export async function importKeyPair(privateKeyPem: string, certificatePem: string): Promise<CryptoKeyPair> {
  const der = fromPem(privateKeyPem);
  const privateKey = (await webcrypto.subtle.importKey("pkcs8", der, ALG, true, ["sign"])) as unknown as CryptoKey;
  const publicKey = await new x509.X509Certificate(certificatePem).publicKey.export(
    ALG,
    ["verify"],
    webcrypto as unknown as Crypto,
  );
  return { privateKey, publicKey };
}

/** PEM blocks end in a newline, so a chain is a plain concatenation. */
function withNewline(pem: string): string {
  return pem.endsWith("\n") ? pem : pem + "\n";
}

export function toPem(der: Buffer, label: string): string {
  const b64 = der.toString("base64").replace(/.{1,64}/g, "$&\n");
  return `-----BEGIN ${label}-----\n${b64}-----END ${label}-----\n`;
}

function fromPem(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""), "base64");
}

export function randomSerial(): string {
  // 16 random bytes; the first in 0x10-0x7f so the DER integer stays positive and every
  // reader (OpenSSL's hex included) spells it with the same 32 digits.
  const b = Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)));
  b[0] = (b[0]! & 0x6f) | 0x10;
  return b.toString("hex");
}

/** The fleet CA: a self-signed certificate that may sign only end-entity certificates. */
export async function createCaCertificate(fleetId: string, keys: CryptoKeyPair, validDays = 3650): Promise<string> {
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=Clankie Fleet CA, O=${fleetId}`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + validDays * 86_400_000),
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return withNewline(cert.toString("pem"));
}

/** A CSR naming the machine; the subject is only a request, the controller decides what it signs. */
export async function createCsr(machine: string, keys: CryptoKeyPair): Promise<string> {
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `CN=${machine}`,
    keys,
    signingAlgorithm: ALG,
  });
  return withNewline(csr.toString("pem"));
}

/** The public key of a CSR whose self-signature is valid; throws otherwise. */
export async function verifiedCsrKey(csrPem: string): Promise<CryptoKey> {
  let csr: x509.Pkcs10CertificateRequest;
  try {
    csr = new x509.Pkcs10CertificateRequest(csrPem);
  } catch {
    throw new Error("the CSR is not a PEM PKCS#10 request");
  }
  if (!(await csr.verify())) throw new Error("the CSR's signature does not match its key");
  const alg = csr.publicKey.algorithm as EcKeyAlgorithm;
  if (alg.name !== "ECDSA" || alg.namedCurve !== "P-256") throw new Error("the CSR's key must be ECDSA P-256");
  return csr.publicKey.export(ALG, ["verify"], webcrypto as unknown as Crypto);
}

export interface IssueOptions {
  ca: { certificatePem: string; keys: CryptoKeyPair };
  subjectKey: CryptoKey;
  /** The machine (client) or the replica's host names and addresses (server). */
  commonName: string;
  fleetId: string;
  usage: "client" | "server";
  dnsNames?: string[];
  ipAddresses?: string[];
  notAfter: Date;
}

export async function issueCertificate(
  o: IssueOptions,
): Promise<{ certificatePem: string; serial: string; notAfter: Date }> {
  const caCert = new x509.X509Certificate(o.ca.certificatePem);
  const serial = randomSerial();
  const names: x509.JsonGeneralName[] = [
    ...(o.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
    ...(o.ipAddresses ?? []).map((value) => ({ type: "ip" as const, value })),
  ];
  // The machine name as a URI SAN too, so a verifier reads it from a typed field.
  if (o.usage === "client") names.push({ type: "url", value: `clankie://${o.fleetId}/machine/${o.commonName}` });
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial,
    subject: `CN=${o.commonName}, O=${o.fleetId}`,
    issuer: caCert.subject,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: o.notAfter,
    signingKey: o.ca.keys.privateKey,
    publicKey: o.subjectKey,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([
        o.usage === "client" ? x509.ExtendedKeyUsage.clientAuth : x509.ExtendedKeyUsage.serverAuth,
      ]),
      new x509.SubjectAlternativeNameExtension(names),
      await x509.AuthorityKeyIdentifierExtension.create(caCert, false),
    ],
  });
  return { certificatePem: withNewline(cert.toString("pem")), serial, notAfter: o.notAfter };
}

/** sha256 of a certificate's DER, lower-case hex: what a join token pins. */
export function certificateFingerprint(pem: string): string {
  return createHash("sha256").update(new NodeX509(pem).raw).digest("hex");
}

export function fingerprintOfDer(der: Buffer): string {
  return createHash("sha256").update(der).digest("hex");
}

export function certificateNotAfter(pem: string): Date {
  return new Date(new NodeX509(pem).validTo);
}

export function certificateSerial(pem: string): string {
  return new NodeX509(pem).serialNumber.toLowerCase();
}
