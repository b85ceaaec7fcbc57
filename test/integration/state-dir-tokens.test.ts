/**
 * Issue 34 item 3 (ADR 0037): a replica's start binds its state directory to the fleet's owner and
 * global-default tokens and never replaces a live one, on both drivers. Before: every start
 * re-issued the state directory's lead.token as global-default's, disabling every other replica's.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { openDatabase, type Database } from "../../controller/db/open.js";
import { conversations, fleetSecrets } from "../../controller/db/schema.js";
import { openStateDir } from "../../controller/state-dir.js";
import { FleetSecrets, OWNER_TOKEN, DEFAULT_LEAD_TOKEN } from "../../controller/leads/fleet-secrets.js";
import { bindStateDirTokens } from "../../controller/leads/state-dir-tokens.js";
import { DEFAULT_CONVERSATION, issueLeadToken } from "../../controller/leads/conversations.js";
import { createLogger } from "../../shared/logger.js";
import { tokenHash } from "../../shared/tokens.js";
import { DRIVERS, prepareStore, tempDir } from "../kit/test-db.js";

describe.each(DRIVERS)(
  "issue 34 item 3: a start adopts the fleet's tokens and never replaces a live one (%s)",
  (driver) => {
    let store: Awaited<ReturnType<typeof prepareStore>>;
    let database: Database;
    const lines: string[] = [];
    const logger = createLogger({ level: "warn", write: (l) => lines.push(l) });
    const liveHash = async () =>
      (await database.db.select().from(conversations).where(eq(conversations.id, DEFAULT_CONVERSATION)))[0]?.tokenHash;

    beforeEach(async () => {
      store = await prepareStore(driver);
      database = await openDatabase(
        store.databaseUrl ? { url: store.databaseUrl } : { dataDir: join(store.stateDir, "pgdata") },
      );
      lines.length = 0;
    });
    afterEach(async () => {
      await database?.close();
      await store?.cleanup();
    });

    it("the first state directory's pair becomes the fleet's; a later one is rewritten to it, and says so", async () => {
      const secrets = new FleetSecrets(database.db, undefined);
      const a = openStateDir(tempDir("a"));
      const b = openStateDir(tempDir("b"));
      expect(b.leadToken).not.toBe(a.leadToken);
      expect(await bindStateDirTokens(database.db, secrets, a, logger)).toEqual({
        ownerToken: a.ownerToken,
        leadToken: a.leadToken,
      });
      expect(await bindStateDirTokens(database.db, secrets, b, logger)).toEqual({
        ownerToken: a.ownerToken,
        leadToken: a.leadToken,
      });
      expect(readFileSync(join(b.dir, "owner.token"), "utf8").trim()).toBe(a.ownerToken);
      expect(readFileSync(join(b.dir, "lead.token"), "utf8").trim()).toBe(a.leadToken);
      expect(await liveHash()).toBe(tokenHash(a.leadToken));
      expect(lines.join("\n")).toMatch(/owner token was not the fleet's/);
      // A's restart changes nothing.
      expect(await bindStateDirTokens(database.db, secrets, openStateDir(a.dir), logger)).toEqual({
        ownerToken: a.ownerToken,
        leadToken: a.leadToken,
      });
    });

    it("global-default rotated through the owner service: the next start adopts the new token", async () => {
      const secrets = new FleetSecrets(database.db, undefined);
      const a = openStateDir(tempDir("a"));
      await bindStateDirTokens(database.db, secrets, a, logger);
      const { token } = await issueLeadToken(database.db, DEFAULT_CONVERSATION, undefined, false, secrets);
      expect(await secrets.read(DEFAULT_LEAD_TOKEN)).toBe(token);
      const c = openStateDir(tempDir("c"));
      expect((await bindStateDirTokens(database.db, secrets, c, logger)).leadToken).toBe(token);
      // A, restarted with its stale lead.token, adopts the rotated one instead of restoring its own.
      expect((await bindStateDirTokens(database.db, secrets, openStateDir(a.dir), logger)).leadToken).toBe(token);
      expect(await liveHash()).toBe(tokenHash(token));
    });

    it("a fleet from before ADR 0037 (only the live token's hash): another replica's start keeps it live; its owner starts and publishes it", async () => {
      const secrets = new FleetSecrets(database.db, undefined);
      const owner = openStateDir(tempDir("legacy-owner"));
      // What the old start wrote: global-default's hash, no copy of the value.
      await issueLeadToken(database.db, DEFAULT_CONVERSATION, owner.leadToken);
      const other = openStateDir(tempDir("legacy-other"));
      const bound = await bindStateDirTokens(database.db, secrets, other, logger);
      expect(bound.leadToken).toBe(other.leadToken);
      expect(await liveHash()).toBe(tokenHash(owner.leadToken));
      expect(lines.join("\n")).toMatch(/it was kept/);
      expect(await secrets.read(DEFAULT_LEAD_TOKEN)).toBeUndefined();
      expect((await bindStateDirTokens(database.db, secrets, owner, logger)).leadToken).toBe(owner.leadToken);
      expect(await secrets.read(DEFAULT_LEAD_TOKEN)).toBe(owner.leadToken);
      expect((await bindStateDirTokens(database.db, secrets, openStateDir(other.dir), logger)).leadToken).toBe(
        owner.leadToken,
      );
    });

    it("with a passphrase the fleet's tokens are sealed in the database; a replica without it cannot start", async () => {
      const sealed = new FleetSecrets(database.db, "correct horse");
      const a = openStateDir(tempDir("a"));
      await bindStateDirTokens(database.db, sealed, a, logger);
      const rows = await database.db.select().from(fleetSecrets);
      expect(rows.map((r) => r.protection)).toEqual(["scrypt-aes256gcm", "scrypt-aes256gcm"]);
      expect(JSON.stringify(rows)).not.toContain(a.ownerToken);
      expect(await sealed.read(OWNER_TOKEN)).toBe(a.ownerToken);
      await expect(
        bindStateDirTokens(database.db, new FleetSecrets(database.db, undefined), openStateDir(tempDir("b")), logger),
      ).rejects.toThrow(/sealed/);
    });
  },
);
