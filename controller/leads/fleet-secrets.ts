/**
 * The fleet's shared secrets in PostgreSQL (fleet_secrets, ADR 0037): the owner token, the
 * global-default lead token (a state directory keeps a copy of each for the local CLI) and the
 * key that signs MCP session ids. The first replica on a database writes each one; every later
 * replica adopts it, so no replica's start disables another's tokens. With a fleet passphrase the
 * values are sealed as the fleet CA key is (fleet/ca.ts): a database dump alone opens nothing.
 */
import { eq, sql } from "drizzle-orm";
import { fleetSecrets } from "../db/schema.js";
import type { Db, Tx } from "../db/open.js";
import { seal, unseal } from "../fleet/ca.js";

export const OWNER_TOKEN = "owner-token";
export const DEFAULT_LEAD_TOKEN = "lead-token:global-default";
export const MCP_SESSION_KEY = "mcp-session-key";

const SEALED = "scrypt-aes256gcm";

export class FleetSecrets {
  constructor(
    private readonly db: Db,
    private readonly passphrase: string | undefined,
  ) {}

  /** The fleet's secret, or undefined when no replica has written it yet. */
  async read(name: string, tx: Db | Tx = this.db): Promise<string | undefined> {
    const [row] = await tx.select().from(fleetSecrets).where(eq(fleetSecrets.name, name));
    return row ? this.open(name, row.value, row.protection) : undefined;
  }

  /** The fleet's secret; `candidate` becomes it when the fleet has none (two replicas at once: the first insert wins). */
  async adopt(name: string, candidate: () => string, tx: Db | Tx = this.db): Promise<string> {
    const existing = await this.read(name, tx);
    if (existing !== undefined) return existing;
    await tx
      .insert(fleetSecrets)
      .values({ name, ...this.sealed(candidate()) })
      .onConflictDoNothing();
    const adopted = await this.read(name, tx);
    if (adopted === undefined) throw new Error(`the fleet secret ${name} vanished after it was written`);
    return adopted;
  }

  /** Replaces the fleet's secret (a rotated global-default token). */
  async publish(name: string, value: string, tx: Db | Tx = this.db): Promise<void> {
    const row = this.sealed(value);
    await tx
      .insert(fleetSecrets)
      .values({ name, ...row })
      .onConflictDoUpdate({ target: fleetSecrets.name, set: { ...row, updatedAt: sql`now()` } });
  }

  private sealed(value: string): { value: string; protection: string } {
    return this.passphrase
      ? { value: seal(value, this.passphrase), protection: SEALED }
      : { value, protection: "plain" };
  }

  private open(name: string, value: string, protection: string): string {
    if (protection !== SEALED) return value;
    if (!this.passphrase)
      throw new Error(`the fleet secret ${name} is sealed: start the controller with CLANKIE_FLEET_CA_PASSPHRASE`);
    return unseal(value, this.passphrase, `the fleet secret ${name}`);
  }
}
