/**
 * The fleet CA, loaded from (or on the first start created in) the journal's database, so
 * every replica on one PostgreSQL signs with the same key (ADR 0020). With a passphrase the
 * key is sealed (scrypt + AES-256-GCM) and a database dump alone cannot sign anything.
 */
import { createCipheriv, createDecipheriv, randomBytes, randomUUID, scryptSync } from "node:crypto";
import { eq } from "drizzle-orm";
import { fleetCa } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { certificateFingerprint, createCaCertificate, generateKeyPair, importKeyPair } from "../../shared/pki/x509.js";
import { FleetError, ErrorCode } from "../../shared/errors.js";

export interface FleetCa {
  readonly fleetId: string;
  readonly certificatePem: string;
  /** sha256 of the CA certificate: what a join token pins. */
  readonly fingerprint: string;
  readonly keys: CryptoKeyPair;
}

const ROW_ID = "fleet";

export async function loadOrCreateCa(db: Db, passphrase: string | undefined): Promise<FleetCa> {
  let [row] = await db.select().from(fleetCa).where(eq(fleetCa.id, ROW_ID));
  if (!row) {
    const fleetId = `fleet-${randomUUID().slice(0, 8)}`;
    const { keys, privateKeyPem } = await generateKeyPair();
    const certificatePem = await createCaCertificate(fleetId, keys);
    const sealed = passphrase ? seal(privateKeyPem, passphrase) : privateKeyPem;
    // Two replicas starting at once: the first insert wins and both read it back.
    await db
      .insert(fleetCa)
      .values({
        id: ROW_ID,
        fleetId,
        certificatePem,
        keyPem: sealed,
        keyProtection: passphrase ? "scrypt-aes256gcm" : "plain",
      })
      .onConflictDoNothing();
    [row] = await db.select().from(fleetCa).where(eq(fleetCa.id, ROW_ID));
  }
  if (!row) throw new Error("the fleet CA row vanished after it was written");
  let keyPem = row.keyPem;
  if (row.keyProtection === "scrypt-aes256gcm") {
    if (!passphrase)
      throw new FleetError(
        ErrorCode.Unauthenticated,
        "the fleet CA key is sealed: start the controller with CLANKIE_FLEET_CA_PASSPHRASE",
      );
    keyPem = unseal(keyPem, passphrase);
  }
  const keys = await importKeyPair(keyPem, row.certificatePem);
  return {
    fleetId: row.fleetId,
    certificatePem: row.certificatePem,
    fingerprint: certificateFingerprint(row.certificatePem),
    keys,
  };
}

/** Seals a secret with the fleet passphrase (scrypt + AES-256-GCM); leads/fleet-secrets.ts seals tokens the same way. */
export function seal(plain: string, passphrase: string): string {
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const key = scryptSync(passphrase, salt, 32);
  const c = createCipheriv("aes-256-gcm", key, iv);
  const ct = Buffer.concat([c.update(plain, "utf8"), c.final()]);
  return ["v1", salt, iv, c.getAuthTag(), ct].map((p) => (typeof p === "string" ? p : p.toString("base64"))).join(":");
}

export function unseal(sealed: string, passphrase: string, what = "the fleet CA key"): string {
  const [v, salt, iv, tag, ct] = sealed.split(":");
  if (v !== "v1" || !salt || !iv || !tag || !ct)
    throw new Error(`the sealed ${what.replace(/^the /, "")} is malformed`);
  const d = createDecipheriv(
    "aes-256-gcm",
    scryptSync(passphrase, Buffer.from(salt, "base64"), 32),
    Buffer.from(iv, "base64"),
  );
  d.setAuthTag(Buffer.from(tag, "base64"));
  try {
    return Buffer.concat([d.update(Buffer.from(ct, "base64")), d.final()]).toString("utf8");
  } catch {
    throw new FleetError(ErrorCode.Unauthenticated, `CLANKIE_FLEET_CA_PASSPHRASE does not open ${what}`);
  }
}
