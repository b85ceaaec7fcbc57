/**
 * Issue 36: revocation checks that do not poll per agent. Each second a replica reads one digest
 * of the fleet's certificates (certificatesVersion) and asks about every live serial only when it
 * moved; so the digest must move on every revocation, removal and enrollment, and on nothing else.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { DRIVERS, openTestDatabase } from "../kit/test-db.js";
import type { Database } from "../../controller/db/open.js";
import { machineCerts } from "../../controller/db/schema.js";
import {
  certificatesVersion,
  recordCertificate,
  revokeMachineCertificates,
  revokedAmong,
} from "../../controller/fleet/machine-certs.js";

describe.each(DRIVERS)("issue 36: the revocation poll's digest (%s)", (driver) => {
  let database: Database;
  let cleanup: () => Promise<void>;
  const later = new Date(Date.now() + 3_600_000);
  beforeAll(async () => {
    ({ database, cleanup } = await openTestDatabase(driver));
    for (const [serial, machine] of [
      ["aa01", "m1"],
      ["aa02", "m2"],
      ["aa03", "m3"],
    ] as const)
      await recordCertificate(database.db, serial, machine, later, new Date());
  });
  afterAll(async () => {
    await database?.close();
    await cleanup?.();
  });

  it("stays put while nothing changes, and moves on a revocation, a removal and an enrollment", async () => {
    const db = database.db;
    const v0 = await certificatesVersion(db);
    expect(await certificatesVersion(db)).toBe(v0);

    expect(await revokeMachineCertificates(db, "m2", new Date())).toBe(1);
    const v1 = await certificatesVersion(db);
    expect(v1).not.toBe(v0);
    expect(await revokedAmong(db, ["aa01", "aa02", "aa03"])).toEqual(new Set(["aa02"]));

    // A removal and an enrollment between two polls keep the count but not the digest.
    await db.delete(machineCerts).where(eq(machineCerts.serial, "aa03"));
    await recordCertificate(db, "aa04", "m4", later, new Date());
    const v2 = await certificatesVersion(db);
    expect(v2).not.toBe(v1);
    expect(await revokedAmong(db, ["aa01", "aa03", "aa04"])).toEqual(new Set(["aa03"]));
    expect(await certificatesVersion(db)).toBe(v2);
  });
});
