/**
 * The machine certificates the fleet CA issued. A connection is admitted only when its
 * certificate's serial is recorded here, unrevoked and unexpired: revocation needs no CRL.
 */
import { and, desc, eq, inArray, isNull, sql } from "drizzle-orm";
import { machineCerts, type MachineCertRow } from "../db/schema.js";
import type { Db, Tx } from "../db/open.js";

/** `revoked`: refused for good (revoked, or no longer on record because the machine was removed). */
export type CertVerdict =
  | { ok: true; machine: string; notAfter: Date }
  | { ok: false; reason: string; revoked: boolean };

export async function recordCertificate(
  tx: Tx | Db,
  serial: string,
  machine: string,
  notAfter: Date,
  issuedAt: Date,
): Promise<void> {
  await tx.insert(machineCerts).values({ serial, machine, notAfter, issuedAt });
}

export async function checkCertificate(db: Db, serial: string, machine: string, now: Date): Promise<CertVerdict> {
  const [row] = await db.select().from(machineCerts).where(eq(machineCerts.serial, serial));
  // The TLS handshake already checked the fleet CA's signature: a serial not on record was removed.
  const refused = (reason: string, revoked: boolean): CertVerdict => ({ ok: false, reason, revoked });
  if (!row) return refused(`certificate of ${machine} is not on record: the machine was removed from this fleet`, true);
  if (row.machine !== machine) return refused(`certificate serial belongs to ${row.machine}`, false);
  if (row.revokedAt) return refused(`certificate of ${machine} revoked at ${row.revokedAt.toISOString()}`, true);
  if (row.notAfter.getTime() <= now.getTime()) return refused("certificate expired", false);
  return { ok: true, machine, notAfter: row.notAfter };
}

/** Revokes every certificate of a machine; returns how many were newly revoked. */
export async function revokeMachineCertificates(db: Db, machine: string, now: Date): Promise<number> {
  const rows = await db
    .update(machineCerts)
    .set({ revokedAt: now })
    .where(and(eq(machineCerts.machine, machine), isNull(machineCerts.revokedAt)))
    .returning({ serial: machineCerts.serial });
  return rows.length;
}

/**
 * One value that changes whenever a certificate is issued, revoked or removed: the revocation
 * poll's look each second is this one row, and it asks about every live serial only when the
 * value moved (issue 36: the per-second check of 1,000 serials cost more than the fleet's
 * heartbeats). A digest, not a count: a removal and an enrollment in one second still change it.
 */
export async function certificatesVersion(db: Db): Promise<string> {
  const [row] = await db
    .select({
      v: sql<string>`md5(coalesce(string_agg(${machineCerts.serial} || ':' || coalesce(${machineCerts.revokedAt}::text, ''), ',' order by ${machineCerts.serial}), ''))`,
    })
    .from(machineCerts);
  return row?.v ?? "";
}

/** Of the given serials, those revoked since or no longer on record (removed): their live connections must go. */
export async function revokedAmong(db: Db, serials: string[]): Promise<Set<string>> {
  if (serials.length === 0) return new Set();
  const rows = await db
    .select({ serial: machineCerts.serial })
    .from(machineCerts)
    .where(and(inArray(machineCerts.serial, serials), isNull(machineCerts.revokedAt)));
  const valid = new Set(rows.map((r) => r.serial));
  return new Set(serials.filter((s) => !valid.has(s)));
}

/** The newest certificate of every machine that ever enrolled. */
export async function latestCertificates(db: Db): Promise<MachineCertRow[]> {
  const rows = await db.select().from(machineCerts).orderBy(machineCerts.machine, desc(machineCerts.issuedAt));
  const seen = new Set<string>();
  return rows.filter((r) => !seen.has(r.machine) && seen.add(r.machine));
}

/** Machines whose newest certificate is revoked: listed as revoked, not as offline, until removed. */
export async function revokedMachines(db: Db): Promise<Set<string>> {
  return new Set((await latestCertificates(db)).filter((c) => c.revokedAt !== null).map((c) => c.machine));
}

export async function machineRevoked(db: Db, machine: string): Promise<boolean> {
  const [latest] = await db
    .select()
    .from(machineCerts)
    .where(eq(machineCerts.machine, machine))
    .orderBy(desc(machineCerts.issuedAt))
    .limit(1);
  return latest?.revokedAt != null;
}
