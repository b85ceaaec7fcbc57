/**
 * hire_agent without a real harness (the real ones are in test/harnesses/hire-*.test.ts):
 * strict arguments, the receipt before any effect, typed refusals with nothing started
 * (missing directory, a harness the machine lacks, relative and '..' paths, control
 * characters), replay and conflict on the same hireId, other conversations, and
 * reconcile_seat_call({hireId}) in its own conversation only (ADR 0213, rules 52–53).
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS } from "../kit/test-db.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import { startFakeHerdr } from "../kit/fake-herdr.js";
import { TYPING_METHODS } from "../../node-agent/panes/herdr-client.js";

const META = "clankie/seat-call";

describe.each(DRIVERS)("hire_agent refusals and receipts on %s", (driver) => {
  let fleet: HireFleet;
  let work: string;

  beforeAll(async () => {
    // PATH without any harness: this machine lacks every one of them.
    fleet = await startHireFleet(driver, { hire: { env: { PATH: "/nonexistent-bin" } } });
    work = mkdtempSync(join(tmpdir(), "clankie-hire-work-"));
  });
  afterAll(async () => {
    await fleet?.close();
  });

  const hire = (args: Record<string, unknown>, hireId?: string, lead = fleet.lead) =>
    lead.call(
      "hire_agent",
      { harness: "codex", workingDirectory: work, title: "worker", role: "tester", ...args },
      hireId ? { [META]: { hireId } } : undefined,
    );
  const journal = (id: string) => {
    const f = join(fleet.agentStateDir, "hires", `${id}.json`);
    return existsSync(f)
      ? (JSON.parse(readFileSync(f, "utf8")) as { state: string; answer?: { launchCommitted: boolean } })
      : undefined;
  };

  it("a harness the machine lacks: harness_unavailable with control.fix, nothing launched, no pane opened", async () => {
    const id = randomUUID();
    const res = await hire({ brief: "do it" }, id);
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({
      outcome: "failed",
      reason: "harness_unavailable",
      hireId: id,
      machine: "testbox",
      harness: "codex",
      launchCommitted: false,
    });
    expect((res.structuredContent!.control as { fix: string }).fix).toMatch(/install codex/);
    expect(res._meta?.[META]).toEqual({ id, tool: "hire_agent", state: "settled", hireId: id });
    expect(journal(id)).toMatchObject({ state: "finished", answer: { launchCommitted: false } });
    expect(fleet.panes()).toEqual([]);
  });

  it("a directory that does not exist: unknown_directory, nothing launched", async () => {
    const res = await hire({ workingDirectory: join(work, "missing") });
    expect(res.structuredContent).toMatchObject({
      outcome: "failed",
      reason: "unknown_directory",
      launchCommitted: false,
    });
    expect(fleet.panes()).toEqual([]);
  });

  it.each([
    ["a relative path", { workingDirectory: "relative/dir" }, /absolute/],
    ["a '..' path", { workingDirectory: "/tmp/../etc" }, /\.\./],
    ["a title with control characters", { title: "evil\u001b]0;x\u0007" }, /control characters/],
    ["an unknown field", { shell: "/bin/sh" }, /shell|unrecognized/i],
    ["an unknown harness", { harness: "grok" }, /harness/],
  ])("%s is refused before any receipt or effect", async (_name, args, why) => {
    const id = randomUUID();
    const res = await hire(args, id);
    expect(res.isError).toBe(true);
    const text = JSON.stringify(res.content);
    expect(text).toMatch(why);
    expect(journal(id)).toBeUndefined();
    // No receipt: reconcile finds nothing under this id.
    const rec = await fleet.lead.call("reconcile_seat_call", { hireId: id });
    expect(rec.structuredContent).toMatchObject({ outcome: "no_matching_receipt" });
    expect(fleet.panes()).toEqual([]);
  });

  it("the same hireId with the same arguments returns the original result and starts nothing again", async () => {
    const id = randomUUID();
    const first = await hire({ workingDirectory: join(work, "nope") }, id);
    const again = await hire({ workingDirectory: join(work, "nope") }, id);
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(fleet.panes()).toEqual([]);
  });

  it("issue 32 item 4: the hireId in upper then lower case is one hire: one receipt, one host-journal entry, the original answer", async () => {
    const id = randomUUID();
    const first = await hire({ brief: "once" }, id.toUpperCase());
    expect(first.structuredContent).toMatchObject({ hireId: id });
    expect(first._meta?.[META]).toMatchObject({ id, hireId: id });
    const again = await hire({ brief: "once" }, id);
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(journal(id)).toMatchObject({ state: "finished" });
    expect((await fleet.lead.call("reconcile_seat_call", { hireId: id.toUpperCase() })).structuredContent).toEqual(
      first.structuredContent,
    );
  });

  it("the same hireId with other arguments, or from another conversation, is refused with nothing dispatched", async () => {
    const id = randomUUID();
    await hire({ workingDirectory: join(work, "nope") }, id);
    const other = await hire({ workingDirectory: join(work, "elsewhere") }, id);
    expect(other.structuredContent).toMatchObject({ outcome: "refused", reason: "receipt_conflict", hireId: id });
    const intruder = await fleet.leadFor("intruder-hire");
    const stolen = await hire({ workingDirectory: join(work, "nope") }, id, intruder);
    // Rule 7, issue 32 item 7: refused, in the words of an unknown id; nothing says it exists elsewhere.
    expect(stolen.structuredContent).toMatchObject({ outcome: "refused", reason: "no_matching_receipt" });
    expect(String(stolen.structuredContent?.detail)).not.toMatch(/another conversation/);
  });

  it("reconcile_seat_call({hireId}) reads the original in its own conversation only and never launches", async () => {
    const id = randomUUID();
    const original = await hire({ workingDirectory: join(work, "nope") }, id);
    const rec = await fleet.lead.call("reconcile_seat_call", { hireId: id });
    expect(rec.structuredContent).toEqual(original.structuredContent);
    const intruder = await fleet.leadFor("intruder-reconcile");
    const other = await intruder.call("reconcile_seat_call", { hireId: id });
    expect(other.structuredContent).toMatchObject({ outcome: "no_matching_receipt" });
    const settle = await fleet.lead.call("reconcile_seat_call", { hireId: id, settle: "not_delivered" });
    expect(settle.isError).toBe(true);
    expect(fleet.panes()).toEqual([]);
  });

  it("a fresh intent must name a settled original: an unsettled or unknown one is refused, nothing launched", async () => {
    const original = randomUUID();
    await hire({ workingDirectory: join(work, "nope") }, original);
    const fresh = randomUUID();
    const res = await hire({ freshIntent: { id: fresh, afterReceiptId: original } });
    expect(res.structuredContent).toMatchObject({ outcome: "failed", reason: "fresh_intent_refused", hireId: fresh });
    expect(String(res.structuredContent?.detail)).toMatch(/not settled/);
  });
});

describe("hire_agent on a Herdr pane host (the fake Herdr: Herdr cannot be installed here)", () => {
  it("an unreachable Herdr is herdr_unreachable with control.fix; nothing launched", async () => {
    const fleet = await startHireFleet("pglite", {
      herdrSocket: join(tmpdir(), `no-herdr-${randomUUID()}.sock`),
      hire: { bins: { pi: process.execPath } },
    });
    try {
      const res = await fleet.lead.call("hire_agent", {
        harness: "pi",
        workingDirectory: tmpdir(),
        title: "t",
        role: "r",
      });
      expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
        outcome: "failed",
        reason: "herdr_unreachable",
        launchCommitted: false,
        control: { reason: "herdr_unreachable" },
      });
      expect((res.structuredContent!.control as { fix: string }).fix).toMatch(/start Herdr/);
    } finally {
      await fleet.close();
    }
  });

  it("bad input on a Herdr host (missing directory, a harness it lacks, relative and '..' paths, control characters) is a typed refusal and calls no Herdr method that opens or starts anything", async () => {
    const herdr = await startFakeHerdr();
    // PATH without any harness and no configured binary: this machine lacks codex.
    const fleet = await startHireFleet("pglite", {
      herdrSocket: herdr.socketPath,
      hire: { env: { PATH: "/nonexistent-bin" } },
    });
    try {
      const work = mkdtempSync(join(tmpdir(), "clankie-hire-herdr-"));
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ workingDirectory: join(work, "missing") }, /unknown_directory/],
        [{ workingDirectory: work, harness: "codex" }, /harness_unavailable/],
        [{ workingDirectory: "relative/dir" }, /absolute/],
        [{ workingDirectory: "/tmp/../etc" }, /\.\./],
        [{ workingDirectory: work, title: "evil\u001b]0;x\u0007" }, /control characters/],
      ];
      for (const [args, why] of cases) {
        const res = await fleet.lead.call("hire_agent", { harness: "pi", title: "t", role: "r", ...args });
        expect(res.isError).toBe(true);
        expect(JSON.stringify(res.structuredContent ?? res.content)).toMatch(why);
      }
      expect(
        herdr.calls.filter((c) =>
          ["pane.split", "agent.start", "pane.report_metadata", "pane.close"].includes(c.method),
        ),
      ).toEqual([]);
      expect(fleet.markedProcesses()).toEqual([]);
    } finally {
      await fleet.close();
      await herdr.close();
    }
  });

  it("a refused agent.start is launch_failed and the hire closes the pane it split, and no other", async () => {
    const herdr = await startFakeHerdr();
    const fleet = await startHireFleet("pglite", {
      herdrSocket: herdr.socketPath,
      hire: { bins: { pi: process.execPath } },
    });
    try {
      herdr.addPane({ pane_id: "w1:p1" });
      herdr.failNextAgentStart("agent_unavailable", "pi is not integrated");
      const res = await fleet.lead.call("hire_agent", {
        harness: "pi",
        workingDirectory: tmpdir(),
        title: "t",
        role: "r",
      });
      expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
        outcome: "failed",
        reason: "launch_failed",
      });
      const split = herdr.calls.filter((c) => c.method === "pane.split");
      const closed = herdr.calls.filter((c) => c.method === "pane.close").map((c) => c.params.pane_id);
      expect(split).toHaveLength(1);
      expect(closed).toEqual([res.structuredContent!.paneId]);
      expect(closed).not.toContain("w1:p1");
      expect(herdr.calls.filter((c) => TYPING_METHODS.includes(c.method))).toEqual([]);
    } finally {
      await fleet.close();
      await herdr.close();
    }
  });
});
