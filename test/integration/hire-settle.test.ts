/**
 * Settling an unresolved hire (rule 53, scenario 27) with the node agent as a real child
 * process: a hire sent to a frozen agent answers start_unconfirmed; the agent is killed
 * before it read the request and restarted; `hire-receipt settle not-launched` is accepted
 * only because a fresh census, taken after the agent sealed the id, proves nothing from the
 * hire exists. The original id stays refused forever; new work needs freshIntent naming
 * the settled original, once.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS } from "../kit/test-db.js";
import { startControllerUnderTest, type ControllerUnderTest } from "../kit/controller-under-test.js";
import { runCli } from "../kit/cli.js";

const META = "clankie/seat-call";

describe.each(DRIVERS)("hire receipts settle on %s", (driver) => {
  let t: ControllerUnderTest;
  let work: string;
  const original = randomUUID();
  const args = () => ({ harness: "codex", workingDirectory: work, title: "w", role: "r", brief: "b" });

  beforeAll(async () => {
    t = await startControllerUnderTest(driver, { hireTimeoutMs: 1000 });
    work = mkdtempSync(join(tmpdir(), "clankie-hire-settle-"));
    // A first hire warms the controller's connection to the agent (it is refused: no pane host).
    const warm = await t.lead.call("hire_agent", args());
    expect(warm.structuredContent).toMatchObject({ outcome: "failed", reason: "harness_unavailable" });
  });
  afterAll(async () => {
    await t?.close();
  });

  const journal = (id: string) => {
    const f = join(t.stateDir, "agent", "hires", `${id}.json`);
    return existsSync(f) ? (JSON.parse(readFileSync(f, "utf8")) as { state: string }) : undefined;
  };

  it("a hire to a frozen agent is start_unconfirmed; killed before reading it, the agent holds nothing of it", async () => {
    t.agent.freeze();
    const res = await t.lead.call("hire_agent", args(), { [META]: { hireId: original } });
    expect(res.structuredContent).toMatchObject({ outcome: "failed", reason: "start_unconfirmed", hireId: original });
    expect(res._meta?.[META]).toMatchObject({ state: "uncertain" });
    // Killed while frozen: the request sat unread in its socket; nothing was reserved.
    await t.agent.kill();
    await t.agent.restart();
    await t.waitOnline();
    expect(journal(original)).toBeUndefined();
  });

  it("settle not-launched from another conversation finds no receipt; from its own it is accepted with census evidence", async () => {
    const wrong = await runCli([
      "hire-receipt",
      "settle",
      original,
      "not-launched",
      "--conversation",
      "someone-else",
      "--json",
      "--state-dir",
      t.stateDir,
    ]);
    expect(JSON.parse(wrong.stdout)).toMatchObject({ state: "refused" });
    const ok = await runCli(["hire-receipt", "settle", original, "not-launched", "--json", "--state-dir", t.stateDir]);
    expect(ok.code, ok.stderr + ok.stdout).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ hireId: original, state: "settled-not-launched" });
    // The agent sealed the id before it looked: a late request can never launch it.
    expect(journal(original)).toMatchObject({ state: "sealed" });
    const again = await runCli([
      "hire-receipt",
      "settle",
      original,
      "abandoned-unknown",
      "--json",
      "--state-dir",
      t.stateDir,
    ]);
    expect(JSON.parse(again.stdout)).toMatchObject({ state: "refused" });
  });

  it("the original hireId stays refused forever: a replay returns the settlement, nothing is launched", async () => {
    const replay = await t.lead.call("hire_agent", args(), { [META]: { hireId: original } });
    expect(replay.structuredContent).toMatchObject({
      outcome: "failed",
      reason: "settled_not_launched",
      hireId: original,
      freshIntentAllowed: true,
    });
    const rec = await t.lead.call("reconcile_seat_call", { hireId: original });
    expect(rec.structuredContent).toMatchObject({ reason: "settled_not_launched" });
    expect(journal(original)).toMatchObject({ state: "sealed" });
  });

  it("new work needs freshIntent{id, afterReceiptId} naming the settled original, and only one fresh intent may follow it", async () => {
    const fresh = randomUUID();
    const res = await t.lead.call("hire_agent", { ...args(), freshIntent: { id: fresh, afterReceiptId: original } });
    // Admitted and sent to the agent (which refuses it for its own reason: no pane host here).
    expect(res.structuredContent).toMatchObject({ hireId: fresh, reason: "harness_unavailable" });
    expect(journal(fresh)).toMatchObject({ state: "finished" });
    const second = await t.lead.call("hire_agent", {
      ...args(),
      freshIntent: { id: randomUUID(), afterReceiptId: original },
    });
    expect(second.structuredContent).toMatchObject({ reason: "fresh_intent_refused" });
    expect(String(second.structuredContent?.detail)).toMatch(/already followed/);
  });

  it("hire-receipt list no longer shows the settled original; bad dispositions are refused", async () => {
    const list = await runCli(["hire-receipt", "list", "--json", "--state-dir", t.stateDir]);
    expect((JSON.parse(list.stdout) as { unresolved: { id: string }[] }).unresolved.map((r) => r.id)).not.toContain(
      original,
    );
    const bad = await runCli(["hire-receipt", "settle", original, "delivered", "--state-dir", t.stateDir]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/usage/);
  });
});
