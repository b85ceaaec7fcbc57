/**
 * A lead token revoked or replaced through one replica stops working on every replica
 * within seconds (issue 11, part 3): two real `clankie controller` processes on one
 * PostgreSQL, the token revoked with the real `clankie lead revoke` against the first, the
 * second refusing it soon after (before: each process cached tokens for good). And
 * `clankie lead token` says when it replaces an older token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgres, tempDir } from "../kit/test-db.js";
import { startControllerProcess, type ControllerProcess } from "../kit/controller-process.js";
import { runCli } from "../kit/cli.js";

async function initializeStatus(mcpUrl: string, token: string): Promise<number> {
  const r = await fetch(mcpUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "0" } },
    }),
  });
  await r.text();
  return r.status;
}

/** Polls until the replica refuses the token; the milliseconds it took, or undefined after `limitMs`. */
async function refusedWithin(mcpUrl: string, token: string, limitMs: number): Promise<number | undefined> {
  const t0 = performance.now();
  while (performance.now() - t0 < limitMs) {
    if ((await initializeStatus(mcpUrl, token)) === 401) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}

describe.runIf(process.env.DATABASE_URL)(
  "lead token revocation across two controller processes on one PostgreSQL",
  () => {
    let pg: Awaited<ReturnType<typeof freshPostgres>>;
    let a: ControllerProcess;
    let b: ControllerProcess;

    beforeAll(async () => {
      pg = await freshPostgres();
      a = await startControllerProcess(tempDir("replica-a"), pg.url);
      b = await startControllerProcess(tempDir("replica-b"), pg.url);
    }, 120_000);
    afterAll(async () => {
      await a?.stop();
      await b?.stop();
      await pg?.drop();
    });

    const issue = async (conversation: string) => {
      const r = await runCli(["lead", "token", "--conversation", conversation, "--json", "--state-dir", a.stateDir]);
      expect(r.code, r.stderr + r.stdout).toBe(0);
      return JSON.parse(r.stdout) as { token: string; replaced: boolean };
    };

    it("lead token says when it replaces an older token; the older one then fails on both replicas", async () => {
      const first = await issue("replicated");
      expect(first.replaced).toBe(false);
      expect(await initializeStatus(b.mcpUrl, first.token)).toBe(200);
      const human = await runCli(["lead", "token", "--conversation", "replicated", "--state-dir", a.stateDir]);
      expect(human.stdout).toMatch(/replaces the conversation's previous token/);
      expect(await refusedWithin(a.mcpUrl, first.token, 10_000)).toBeDefined();
      expect(await refusedWithin(b.mcpUrl, first.token, 10_000)).toBeDefined();
    });

    it("lead revoke on one replica: the other refuses the token within seconds", async () => {
      const { token } = await issue("to-revoke");
      // Both replicas have just accepted (and so cached) the token.
      expect(await initializeStatus(a.mcpUrl, token)).toBe(200);
      expect(await initializeStatus(b.mcpUrl, token)).toBe(200);
      const r = await runCli(["lead", "revoke", "--conversation", "to-revoke", "--json", "--state-dir", a.stateDir]);
      expect(r.code, r.stderr + r.stdout).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ conversationId: "to-revoke", revoked: true });
      expect(await initializeStatus(a.mcpUrl, token)).toBe(401);
      const ms = await refusedWithin(b.mcpUrl, token, 10_000);
      expect(ms, "replica b still accepted the revoked token after 10 s").toBeDefined();
      // Revoking again changes nothing and says so.
      const again = await runCli([
        "lead",
        "revoke",
        "--conversation",
        "to-revoke",
        "--json",
        "--state-dir",
        a.stateDir,
      ]);
      expect(JSON.parse(again.stdout)).toMatchObject({ revoked: false });
      // A new token for the conversation works again, on both.
      const fresh = await issue("to-revoke");
      expect(fresh.replaced).toBe(false);
      expect(await initializeStatus(b.mcpUrl, fresh.token)).toBe(200);
    });
  },
);
