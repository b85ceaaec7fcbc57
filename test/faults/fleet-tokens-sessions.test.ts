/**
 * Issue 34 item 3: tokens and MCP sessions are fleet state. Three real `clankie controller`
 * processes (dist/) on one PostgreSQL, started one after another as docs/operations.md says, each
 * with its own state directory. Before ADR 0037 each start restored its own lead.token into the
 * journal (A's lead token got 401 everywhere once B started), owner tokens differed per replica,
 * and a session opened on A got 404 unknown_session on B.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgres, tempDir } from "../kit/test-db.js";
import { startControllerProcess, type ControllerProcess } from "../kit/controller-process.js";
import { runCli } from "../kit/cli.js";
import { ownerOf } from "../kit/owner.js";
import { readToken } from "../../controller/state-dir.js";

const PROTOCOL = "2025-06-18";

interface Answer {
  status: number;
  session: string | null;
  body: { result?: Record<string, unknown>; error?: { message?: string; data?: { reason?: string } } };
}

async function post(
  mcpUrl: string,
  token: string,
  message: Record<string, unknown>,
  session?: string,
): Promise<Answer> {
  const r = await fetch(mcpUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
      ...(session ? { "mcp-session-id": session, "mcp-protocol-version": PROTOCOL } : {}),
    },
    body: JSON.stringify({ jsonrpc: "2.0", ...message }),
  });
  const text = await r.text();
  return { status: r.status, session: r.headers.get("mcp-session-id"), body: text ? JSON.parse(text) : {} };
}

/** initialize + notifications/initialized on one replica; the session id it minted. */
async function openSession(mcpUrl: string, token: string): Promise<string> {
  const init = await post(mcpUrl, token, {
    id: 1,
    method: "initialize",
    params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "t", version: "0" } },
  });
  expect(init.status, JSON.stringify(init.body)).toBe(200);
  expect(init.session).toBeTruthy();
  const note = await post(mcpUrl, token, { method: "notifications/initialized" }, init.session!);
  expect(note.status).toBe(202);
  return init.session!;
}

const listSeats = (mcpUrl: string, token: string, session: string) =>
  post(mcpUrl, token, { id: 2, method: "tools/call", params: { name: "list_seats", arguments: {} } }, session);

async function until<T>(what: string, probe: () => Promise<T | undefined>, limitMs = 10_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() - t0 > limitMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.runIf(process.env.DATABASE_URL)(
  "issue 34 item 3: tokens and MCP sessions are fleet state (three controller processes on one PostgreSQL)",
  () => {
    let pg: Awaited<ReturnType<typeof freshPostgres>>;
    const replicas: ControllerProcess[] = [];
    /** Every token any replica's state directory held, captured as each replica came up. */
    const ownerTokens = new Set<string>();
    const leadTokens = new Set<string>();
    let alphaToken: string;

    beforeAll(async () => {
      pg = await freshPostgres();
      for (const name of ["a", "b", "c"]) {
        const r = await startControllerProcess(tempDir(`replica-${name}`), pg.url);
        replicas.push(r);
        ownerTokens.add(r.ownerToken);
        leadTokens.add(r.leadToken);
        if (name === "a") {
          // A named conversation's token, minted through the first replica before the others start.
          const issued = await runCli([
            "lead",
            "token",
            "--conversation",
            "alpha",
            "--json",
            "--state-dir",
            r.stateDir,
          ]);
          expect(issued.code, issued.stderr + issued.stdout).toBe(0);
          alphaToken = (JSON.parse(issued.stdout) as { token: string }).token;
        }
      }
    }, 180_000);
    afterAll(async () => {
      await Promise.all(replicas.map((r) => r.stop()));
      await pg?.drop();
    });

    it("a second and a third replica started as the docs say leave every lead and owner token valid on every replica", async () => {
      const [a] = replicas;
      // Every state directory now holds the fleet's pair: the first replica's.
      expect([...ownerTokens]).toEqual([a!.ownerToken]);
      expect([...leadTokens]).toEqual([a!.leadToken]);
      for (const r of replicas) {
        expect(readToken(r.stateDir, "owner")).toBe(a!.ownerToken);
        expect(readToken(r.stateDir, "lead")).toBe(a!.leadToken);
      }
      for (const r of replicas) {
        for (const token of [a!.leadToken, alphaToken]) {
          const init = await post(r.mcpUrl, token, {
            id: 1,
            method: "initialize",
            params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "t", version: "0" } },
          });
          expect(init.status, `${r.mcpUrl} refused a lead token`).toBe(200);
        }
        for (const token of ownerTokens) await expect(ownerOf(r.url, token).seats()).resolves.toBeDefined();
        // The CLI of each replica's state directory works against every replica.
        for (const other of replicas) {
          const cli = await runCli(["seat", "list", "--json", "--state-dir", r.stateDir, "--controller", other.url]);
          expect(cli.code, cli.stderr).toBe(0);
        }
      }
    });

    it("an MCP session opened on replica A serves tools/call on B and C over plain HTTP (no stickiness)", async () => {
      const [a, b, c] = replicas;
      const session = await openSession(a!.mcpUrl, alphaToken);
      for (const r of [b!, c!, a!]) {
        const answer = await listSeats(r.mcpUrl, alphaToken, session);
        expect(answer.status, `${r.mcpUrl}: ${JSON.stringify(answer.body)}`).toBe(200);
        expect(answer.body.result?.isError).toBeFalsy();
        expect(answer.body.result?.structuredContent).toHaveProperty("seats");
      }
      // Another token of the fleet cannot use it on any replica, even the one that resumed it.
      for (const r of [a!, b!, c!]) {
        const stranger = await listSeats(r.mcpUrl, a!.leadToken, session);
        expect(stranger.status).toBe(404);
        expect(stranger.body.error?.data?.reason).toBe("unknown_session");
      }
      // An id no replica of this fleet signed is an unknown session, as before.
      const forged = await listSeats(b!.mcpUrl, alphaToken, "0b6f0c0e-4cde-4c57-a3f4-3c7b8f7bd9b1");
      expect(forged.status).toBe(404);
      expect(forged.body.error?.data?.reason).toBe("unknown_session");
    });

    it("a session its client ended on A is over on B and C", async () => {
      const [a, b, c] = replicas;
      const session = await openSession(a!.mcpUrl, alphaToken);
      expect((await listSeats(b!.mcpUrl, alphaToken, session)).status).toBe(200);
      const r = await fetch(a!.mcpUrl, {
        method: "DELETE",
        headers: { authorization: `Bearer ${alphaToken}`, "mcp-session-id": session, "mcp-protocol-version": PROTOCOL },
      });
      expect(r.status).toBe(200);
      // C never saw it; B resumed it before the end and learns of it at its next sweep (a quarter of the idle time, at most 60 s).
      const onC = await listSeats(c!.mcpUrl, alphaToken, session);
      expect(onC.status).toBe(404);
      expect(onC.body.error?.data?.reason).toBe("unknown_session");
      expect((await listSeats(a!.mcpUrl, alphaToken, session)).status).toBe(404);
    });

    it("the sessions-per-conversation cap holds for the fleet: a session pushed over it on A is unknown on B", async () => {
      const [a, b] = replicas;
      const issued = await runCli(["lead", "token", "--conversation", "capped", "--json", "--state-dir", a!.stateDir]);
      const token = (JSON.parse(issued.stdout) as { token: string }).token;
      const ids: string[] = [];
      // 64 sessions per conversation by default (config.ts).
      for (let i = 0; i < 65; i++) ids.push(await openSession(a!.mcpUrl, token));
      const first = await listSeats(b!.mcpUrl, token, ids[0]!);
      expect(first.status).toBe(404);
      expect(first.body.error?.data?.reason).toBe("unknown_session");
      expect((await listSeats(b!.mcpUrl, token, ids[64]!)).status).toBe(200);
    });

    it("a lead token rotated through one replica ends its sessions on every replica", async () => {
      const [a, b, c] = replicas;
      const issue = async () => {
        const r = await runCli(["lead", "token", "--conversation", "rotating", "--json", "--state-dir", a!.stateDir]);
        expect(r.code, r.stderr + r.stdout).toBe(0);
        return (JSON.parse(r.stdout) as { token: string }).token;
      };
      const first = await issue();
      const session = await openSession(a!.mcpUrl, first);
      // B and C have resumed (and cached) the session before the rotation.
      for (const r of [b!, c!]) expect((await listSeats(r.mcpUrl, first, session)).status).toBe(200);
      const second = await issue();
      for (const r of [a!, b!, c!]) {
        // The old token is refused once the replica's 2 s token cache lapses...
        await until(`${r.mcpUrl} refusing the rotated token`, async () =>
          (await listSeats(r.mcpUrl, first, session)).status === 401 ? true : undefined,
        );
        // ...and the new token does not inherit the old token's session.
        const inherited = await listSeats(r.mcpUrl, second, session);
        expect(inherited.status).toBe(404);
        expect(inherited.body.error?.data?.reason).toBe("unknown_session");
      }
      // A session opened with the new token works everywhere.
      const fresh = await openSession(c!.mcpUrl, second);
      for (const r of [a!, b!]) expect((await listSeats(r.mcpUrl, second, fresh)).status).toBe(200);
    });

    it("global-default's token rotated through one replica is the fleet's: a replica started afterwards adopts it", async () => {
      const [a] = replicas;
      const rotated = await runCli([
        "lead",
        "token",
        "--conversation",
        "global-default",
        "--json",
        "--state-dir",
        a!.stateDir,
      ]);
      expect(rotated.code, rotated.stderr).toBe(0);
      const token = (JSON.parse(rotated.stdout) as { token: string }).token;
      expect(readToken(a!.stateDir, "lead")).toBe(token);
      const d = await startControllerProcess(tempDir("replica-d"), pg.url);
      replicas.push(d);
      expect(d.leadToken).toBe(token);
      expect(d.ownerToken).toBe(a!.ownerToken);
      for (const r of replicas) {
        await until(`${r.mcpUrl} accepting the rotated global-default token`, async () => {
          const init = await post(r.mcpUrl, token, {
            id: 1,
            method: "initialize",
            params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "t", version: "0" } },
          });
          return init.status === 200 ? true : undefined;
        });
      }
    });
  },
);
