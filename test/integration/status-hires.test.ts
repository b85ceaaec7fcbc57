/**
 * Issue 37 item 3, hires in view: StatusService.ListHires and Watch show each hire with its
 * state, harness, machine, seat, pane and readiness evidence, beside `clankie hire-receipt list
 * --all`. A real agent (a child process, no harness on its PATH) refuses a hire with its fix;
 * the spawned hire is recorded by the controller's own settle (test/kit/hire-records.ts) from an
 * agent answer shaped as node-agent/hire/hire.ts sends it, since no harness can start here.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SeatKind as PbSeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { ListHiresRequestSchema, WatchRequestSchema } from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { DRIVERS } from "../kit/test-db.js";
import { startControllerUnderTest, type ControllerUnderTest } from "../kit/controller-under-test.js";
import { runCli } from "../kit/cli.js";
import { recordHire } from "../kit/hire-records.js";

describe.each(DRIVERS)("hires in view on %s", (driver) => {
  let t: ControllerUnderTest;
  let refusedId: string;
  const spawnedId = randomUUID();

  beforeAll(async () => {
    t = await startControllerUnderTest(driver);
    const work = mkdtempSync(join(tmpdir(), "clankie-hire-view-"));
    const args = { harness: "codex", workingDirectory: work, title: "w", role: "r" };
    const refused = await t.lead.call("hire_agent", args);
    expect(refused.structuredContent).toMatchObject({ outcome: "failed", reason: "harness_unavailable" });
    refusedId = String(refused.structuredContent!.hireId);

    // A spawned hire as the controller records it: reserved at admission, then settled from the agent's answer.
    await recordHire(t.controller.database.db, t.stateDir, {
      id: spawnedId,
      machine: "box",
      harness: "claude",
      answer: {
        outcome: "spawned",
        detail: "claude started in pane %7 as seat reviewer; the brief went in natively (started)",
        seat: { name: "reviewer", kind: PbSeatKind.CLAUDE, occupantId: "occ-1" },
        paneId: "%7",
        briefMechanism: "started",
        briefDeliveryId: randomUUID(),
        proofs: [
          { kind: "pane_alive", outcome: "proven", detail: "pane %7 runs claude", ageAtWriteMs: 12 },
          { kind: "channel_bound", outcome: "proven", detail: "the channel answered", ageAtWriteMs: 40 },
        ],
        launchCommitted: true,
      },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("ListHires: state, harness, seat, pane, brief and readiness proofs; the agent's fix for a refusal", async () => {
    const { hires } = await t.owner.status.listHires(create(ListHiresRequestSchema, {}));
    const spawned = hires.find((h) => h.hireId === spawnedId)!;
    expect(spawned).toMatchObject({ state: "spawned", harness: "claude", machine: "box", seatId: "box/reviewer" });
    expect(spawned).toMatchObject({ paneId: "%7", briefMechanism: "started", unresolved: false });
    expect(spawned.detail).toMatch(/started in pane %7/);
    expect(spawned.readinessProofs.map((p) => [p.kind, p.outcome, p.ageAtWriteMs])).toEqual([
      ["pane_alive", "proven", 12],
      ["channel_bound", "proven", 40],
    ]);
    const refused = hires.find((h) => h.hireId === refusedId)!;
    expect(refused).toMatchObject({ state: "failed", reason: "harness_unavailable", harness: "codex", machine: "box" });
    expect(refused).toMatchObject({ seatId: "", paneId: "", unresolved: false });
    expect(refused.controlFix).toMatch(/install codex/);
    // Newest first.
    expect(hires[0]!.hireId).toBe(spawnedId);
    const unresolved = await t.owner.status.listHires(create(ListHiresRequestSchema, { unresolvedOnly: true }));
    expect(unresolved.hires).toEqual([]);
  });

  it("Watch carries the hires, so the dashboard's view is live", async () => {
    const abort = new AbortController();
    for await (const msg of t.owner.status.watch(create(WatchRequestSchema, {}), { signal: abort.signal })) {
      expect(msg.hires.map((h) => h.hireId)).toEqual([spawnedId, refusedId]);
      abort.abort();
      break;
    }
  });

  it("hire-receipt list --all lists settled hires too; without it only unresolved ones", async () => {
    const all = await runCli(["hire-receipt", "list", "--all", "--json", "--state-dir", t.stateDir]);
    expect(all.code).toBe(0);
    const rows = (JSON.parse(all.stdout) as { hires: { id: string; state: string; seat: string }[] }).hires;
    expect(rows.find((r) => r.id === spawnedId)).toMatchObject({ state: "spawned", seat: "box/reviewer" });
    expect(rows.find((r) => r.id === refusedId)).toMatchObject({ state: "failed" });
    const text = await runCli(["hire-receipt", "list", "--all", "--state-dir", t.stateDir]);
    expect(text.stdout).toContain(spawnedId);
    expect(text.stdout).not.toContain("settle with");
    const unresolved = await runCli(["hire-receipt", "list", "--json", "--state-dir", t.stateDir]);
    expect(JSON.parse(unresolved.stdout)).toEqual({ unresolved: [] });
  });

  it("issue 35 item 1: hire-receipt list --state filters every hire; --all's table says why one failed", async () => {
    const failed = await runCli(["hire-receipt", "list", "--state", "failed", "-o", "json", "--state-dir", t.stateDir]);
    expect(failed.code).toBe(0);
    const rows = (JSON.parse(failed.stdout) as { hires: { id: string; state: string; reason: string }[] }).hires;
    expect(rows.map((r) => [r.id, r.state, r.reason])).toEqual([[refusedId, "failed", "harness_unavailable"]]);
    const spawned = await runCli(["hire-receipt", "list", "--state", "spawned", "--state-dir", t.stateDir]);
    expect(spawned.stdout).toContain(spawnedId);
    expect(spawned.stdout).not.toContain(refusedId);
    const none = await runCli(["hire-receipt", "list", "--state", "abandoned-unknown", "--state-dir", t.stateDir]);
    expect(none.stdout.trim()).toBe("no abandoned-unknown hires");
    const table = (await runCli(["hire-receipt", "list", "--all", "--state-dir", t.stateDir])).stdout.split("\n");
    expect(table[0]).toMatch(/^ID\s+CONVERSATION\s+MACHINE\s+HARNESS\s+STATE\s+SEAT\s+AGE\s+REASON$/);
    expect(table.find((l) => l.startsWith(refusedId))).toMatch(/failed\s+.*harness_unavailable$/);
    const bad = await runCli(["hire-receipt", "list", "--state", "gone", "--state-dir", t.stateDir]);
    expect([bad.code, bad.stderr]).toEqual([
      2,
      expect.stringMatching(/^clankie: invalid_argument: --state must be one of reserved, launching, spawned/),
    ]);
    // Nothing unresolved: the empty answer says how to see every hire.
    expect((await runCli(["hire-receipt", "list", "--state-dir", t.stateDir])).stdout.trim()).toBe(
      "no unresolved hires (clankie hire-receipt list --all shows every hire)",
    );
  });
});
