/**
 * The two-command promise with real processes: `clankie up` (controller + a separate
 * node-agent process + database), the CLI, the official MCP client, and a stock grpc-js
 * client reading the status service.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { prepareStore } from "../kit/test-db.js";
import { childPids, runCli, startUp, type UpProcess } from "../kit/cli.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { readToken } from "../../controller/state-dir.js";

const driver = process.env.DATABASE_URL ? "postgres" : "pglite";
const PROTO_ROOT = fileURLToPath(new URL("../../proto", import.meta.url));

describe(`clankie up (real processes, ${driver})`, () => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let up: UpProcess;
  let lead: LeadClient;
  let agentPid: number;
  const env = () => (store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : { DATABASE_URL: "" });
  const cli = (...args: string[]) => runCli([...args, "--state-dir", store.stateDir], env());

  beforeAll(async () => {
    store = await prepareStore(driver);
    up = await startUp(
      ["--state-dir", store.stateDir, "--port", "0", "--machine", "e2e", "--deliver-timeout-ms", "3000"],
      env(),
    );
    lead = await connectLead(up.ready.mcpUrl, up.ready.token);
    const pids = childPids(up.child.pid!);
    expect(pids).toHaveLength(1);
    agentPid = pids[0]!;
  });
  afterAll(async () => {
    await lead?.close();
    if (agentPid) {
      try {
        process.kill(agentPid, "SIGCONT");
      } catch {
        // already gone
      }
    }
    await up?.stop();
    await store?.cleanup();
  });

  it("prints exactly one JSON line with mcpUrl, token, statusUrl, dashboardUrl, agentUrl and the bridge command when ready (no caFile on loopback)", () => {
    expect(Object.keys(up.ready).sort()).toEqual([
      "agentUrl",
      "bridge",
      "dashboardUrl",
      "mcpUrl",
      "statusUrl",
      "token",
    ]);
    expect(up.ready.agentUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    // The lead harness config starts the stdio bridge: command + args, and no token anywhere in them.
    expect(up.ready.bridge).toEqual({
      command: process.execPath,
      args: [expect.stringMatching(/\/dist\/cli\/main\.js$/), "mcp", "--state-dir", store.stateDir],
    });
    expect(JSON.stringify(up.ready.bridge)).not.toContain(up.ready.token);
    expect(up.ready.dashboardUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dashboard$/);
    expect(up.ready.mcpUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(up.extraStdout).toEqual([]);
  });

  it("a message travels lead → MCP → controller → agent process → mailbox, and reconcile returns the original", async () => {
    const added = await cli("seat", "add", "mailbox", "inbox", "--json");
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ seatId: "e2e/inbox", created: true });

    const sent = await lead.call("message_seat", { seat: "inbox", message: "Please run the tests.\nThen report." });
    expect(sent.structuredContent).toMatchObject({ outcome: "delivered", seat: "e2e/inbox" });
    const id = sent.structuredContent!.deliveryId as string;

    const read = await cli("mailbox", "read", "inbox", "--json");
    expect(read.code).toBe(0);
    expect(JSON.parse(read.stdout).messages).toEqual([
      expect.objectContaining({ deliveryId: id, text: "Please run the tests.\nThen report.", from: "global-default" }),
    ]);

    const receipts = await ownerOf(up.ready.statusUrl, readToken(store.stateDir, "owner")!).receipts();
    expect(receipts.find((r) => r.deliveryId === id)).toMatchObject({ state: "delivered", nativeReceiptId: "inbox#1" });

    const rec = await lead.call("reconcile_seat_call", { deliveryId: id });
    expect(rec.structuredContent).toEqual(sent.structuredContent);
  });

  it("the local agent enrolled like any fleet machine: its own key (0600) and certificate, listed by fleet list", async () => {
    const { statSync } = await import("node:fs");
    expect(statSync(`${store.stateDir}/agent/identity/key.pem`).mode & 0o777).toBe(0o600);
    const list = JSON.parse((await cli("fleet", "list", "--json")).stdout) as {
      machines: { machine: string; status: string }[];
    };
    expect(list.machines).toContainEqual(expect.objectContaining({ machine: "e2e", status: "online" }));
  });

  it("the receipt is committed before the agent sees the message; a lost answer is uncertain and is never resent", async () => {
    const owner = ownerOf(up.ready.statusUrl, readToken(store.stateDir, "owner")!);
    process.kill(agentPid, "SIGSTOP");
    const pending = lead.call("message_seat", { seat: "inbox", message: "sent while the agent is frozen" });
    // The agent cannot run, yet the receipt is already in the journal: it was written first.
    let row;
    for (let i = 0; i < 50 && !row; i++) {
      row = (await owner.receipts()).find((r) => r.state === "dispatching");
      if (!row) await new Promise((r) => setTimeout(r, 50));
    }
    expect(row).toBeDefined();
    const res = await pending;
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({
      schemaVersion: 1,
      outcome: "uncertain",
      deliveryStage: "uncertain",
      deliveryId: row!.deliveryId,
      tool: "message_seat",
      reconcileTool: "reconcile_seat_call",
    });
    expect(res._meta?.["clankie/seat-call"]).toMatchObject({ state: "uncertain", deliveryId: row!.deliveryId });
    process.kill(agentPid, "SIGCONT");

    // Calling again with the same id does not dispatch again.
    const again = await lead.call(
      "message_seat",
      { seat: "inbox", message: "sent while the agent is frozen" },
      { "clankie/seat-call": { deliveryId: row!.deliveryId } },
    );
    expect(again.structuredContent).toMatchObject({ outcome: "uncertain" });

    // Reconciliation reports what the seat's session proves, and sends nothing.
    await new Promise((r) => setTimeout(r, 500));
    const inbox = JSON.parse((await cli("mailbox", "read", "inbox", "--peek", "--json")).stdout).messages as {
      deliveryId: string;
    }[];
    const copies = inbox.filter((m) => m.deliveryId === row!.deliveryId).length;
    expect(copies).toBeLessThanOrEqual(1);
    const rec = await lead.call("reconcile_seat_call", { deliveryId: row!.deliveryId });
    if (copies === 1)
      expect(rec.structuredContent).toMatchObject({ outcome: "delivered", detail: expect.stringContaining("session") });
    else
      expect(rec.structuredContent).toMatchObject({
        outcome: "uncertain",
        detail: expect.stringContaining("does not hold"),
      });
    const after = JSON.parse((await cli("mailbox", "read", "inbox", "--peek", "--json")).stdout).messages as {
      deliveryId: string;
    }[];
    expect(after.filter((m) => m.deliveryId === row!.deliveryId).length).toBe(copies);
  });

  it("a stock @grpc/grpc-js client lists seats from the status service and gets SERVING from health", async () => {
    const def = protoLoader.loadSync(["clankie/fleet/v1/status.proto", "grpc/health/v1/health.proto"], {
      includeDirs: [PROTO_ROOT],
      longs: String,
      enums: String,
      defaults: true,
    });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      clankie: { fleet: { v1: { StatusService: grpc.ServiceClientConstructor } } };
      grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
    };
    const target = new URL(up.ready.statusUrl).host;
    const status = new pkg.clankie.fleet.v1.StatusService(target, grpc.credentials.createInsecure());
    const health = new pkg.grpc.health.v1.Health(target, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${readToken(store.stateDir, "owner")}`);
    try {
      const seats = await new Promise<{ seats: { id: string; online: boolean; seat: { kind: string } }[] }>(
        (resolve, reject) =>
          (
            status as unknown as {
              listSeats: (r: object, m: grpc.Metadata, cb: (e: Error | null, v: never) => void) => void;
            }
          ).listSeats({}, md, (e, v) => (e ? reject(e) : resolve(v))),
      );
      expect(seats.seats).toContainEqual(
        expect.objectContaining({
          id: "e2e/inbox",
          online: true,
          seat: expect.objectContaining({ kind: "SEAT_KIND_MAILBOX" }),
        }),
      );
      const unauth = await new Promise<grpc.ServiceError>((resolve) =>
        (status as unknown as { listSeats: (r: object, cb: (e: grpc.ServiceError) => void) => void }).listSeats(
          {},
          (e) => resolve(e),
        ),
      );
      expect(unauth.code).toBe(grpc.status.UNAUTHENTICATED);
      const check = await new Promise<{ status: string }>((resolve, reject) =>
        (health as unknown as { check: (r: object, cb: (e: Error | null, v: never) => void) => void }).check(
          { service: "" },
          (e, v) => (e ? reject(e) : resolve(v)),
        ),
      );
      expect(check.status).toBe("SERVING");
    } finally {
      status.close();
      health.close();
    }
  });

  it("clankie doctor checks database, agents and port, and exits 0 when all is well", async () => {
    const res = await cli("doctor", "--json");
    const report = JSON.parse(res.stdout);
    expect(res.code).toBe(0);
    expect(report.ok).toBe(true);
    expect(report.checks.map((c: { name: string }) => c.name)).toEqual(
      expect.arrayContaining(["port", "controller", "database", "agents", "agent e2e"]),
    );
  });

  it("stops cleanly on SIGTERM and takes its agent process with it; doctor then exits 3, no controller answers", async () => {
    const code = await up.stop();
    expect(code).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(() => process.kill(agentPid, 0)).toThrow();
    const doctor = await cli("doctor", "--json");
    expect(doctor.code).toBe(3);
  });
});

describe("clankie startup failures", () => {
  it("a database that cannot be reached at start gives one clear line and a non-zero exit", async () => {
    const dir = join(process.env.TMPDIR ?? "/tmp", `clankie-nodb-${process.pid}`);
    const res = await runCli(["up", "--state-dir", dir, "--port", "0"], {
      DATABASE_URL: "postgres://clankie@127.0.0.1:1/nothing",
    });
    expect(res.code).not.toBe(0);
    expect(res.stderr.trim().split("\n")).toHaveLength(1);
    expect(res.stderr).toMatch(
      /^clankie: database_unreachable: cannot open PostgreSQL at postgres:\/\/clankie@127\.0\.0\.1:1\/nothing/,
    );
  });
});
