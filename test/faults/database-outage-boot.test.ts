/**
 * The journal's PostgreSQL answering nothing while a controller starts (ADR 0033, "at start"):
 * the start ends with a typed `database_unreachable` that names what it was doing, within the
 * answer deadline and a probe's interval, where it waited for ever in silence; and once the
 * database answers again, the same state directory starts as usual. On a real PostgreSQL behind
 * a relay that freezes at an exact statement (test/fixtures/pg-wire-relay.ts), through the real CLI.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../kit/cli.js";
import { startControllerProcess } from "../kit/controller-process.js";
import { available } from "../kit/requirements.js";
import { freshPostgres, tempDir } from "../kit/test-db.js";
import { startPgWireRelay, type PgWireRelay } from "../fixtures/pg-wire-relay.js";

/** The deadline (statement timeout 5 s + 2 s), a probe interval (2 s) and a connect timeout, with room. */
const BOUND_MS = 20_000;

describe.runIf(available("postgres"))("a controller starting while its PostgreSQL answers nothing", () => {
  let relay: PgWireRelay;
  let db: { url: string; drop: () => Promise<void> };
  let viaRelay: string;

  beforeAll(async () => {
    const target = new URL(process.env.DATABASE_URL!);
    relay = await startPgWireRelay(target.hostname, Number(target.port || 5432));
    db = await freshPostgres();
    const u = new URL(db.url);
    u.hostname = "127.0.0.1";
    u.port = String(relay.port);
    viaRelay = u.toString();
  });
  afterAll(async () => {
    relay?.thaw();
    await relay?.close();
    await db?.drop();
  });

  const start = async (stateDir: string) => {
    const t = performance.now();
    const run = await runCli([
      "controller",
      "--json",
      "--state-dir",
      stateDir,
      "--port",
      "0",
      "--log-level",
      "error",
      "--database-url",
      viaRelay,
    ]);
    return { ...run, ms: performance.now() - t, error: errorOf(run.stdout + run.stderr) };
  };

  it("ADR 0033: frozen during the migrations, the start ends database_unreachable, naming them; after the thaw the same state starts", async () => {
    const stateDir = tempDir(`boot-migrate-${randomBytes(3).toString("hex")}`);
    const frozen = relay.freezeWhenClientSends("pg_advisory_lock");
    const run = await start(stateDir);
    await frozen;
    expect(run.code, run.stdout + run.stderr).not.toBe(0);
    expect(run.error?.code, run.stdout + run.stderr).toBe("database_unreachable");
    expect(run.error?.message).toMatch(/stopped answering while the migrations ran/);
    // Before: no answer at all (the test's 60 s runCli bound killed it).
    expect(run.ms).toBeLessThan(BOUND_MS);
    relay.thaw();
    const controller = await startControllerProcess(stateDir, viaRelay);
    await controller.stop();
  }, 90_000);

  it("ADR 0033: frozen as it registers itself (after the migrations), the start ends database_unreachable, not internal", async () => {
    const stateDir = tempDir(`boot-register-${randomBytes(3).toString("hex")}`);
    // The migrations are applied first, so the first statement to name the table is the registration.
    await (await startControllerProcess(stateDir, viaRelay)).stop();
    const frozen = relay.freezeWhenClientSends('insert into "controller_instances"');
    const run = await start(stateDir);
    await frozen;
    expect(run.error?.code, run.stdout + run.stderr).toBe("database_unreachable");
    expect(run.error?.message).toMatch(
      /while the controller was registering itself \(the database sent no answer in time \(JOURNAL_NO_ANSWER\)\)/,
    );
    expect(run.ms).toBeLessThan(BOUND_MS);
    relay.thaw();
    const controller = await startControllerProcess(stateDir, viaRelay);
    await controller.stop();
  }, 90_000);
});

function errorOf(output: string): { code: string; message: string } | undefined {
  for (const line of output.split("\n")) {
    try {
      const parsed = JSON.parse(line) as { error?: { code: string; message: string } };
      if (parsed.error) return parsed.error;
    } catch {
      // a log line that is not JSON
    }
  }
  return undefined;
}
