/**
 * hire_agent's typed failures with the real harnesses in real tmux (ADR 0213, rule 52):
 * folder trust is the owner's decision (trust_required, the prompt never answered, the
 * pane left for the owner); a consent prompt nobody answers is not_ready with
 * control.reason consent_required; a harness that exits at once is launch_failed and only
 * then is the pane this hire opened closed; at_capacity launches nothing.
 */
import { randomUUID } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import { requireHarness } from "./kit/harness-bin.js";
import { claudeHireEnv, codexHireEnv, piHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { cleanupCodexEnv } from "./kit/codex-env.js";

const codex = requireHarness("codex");
const pi = requireHarness("pi");
const claude = requireHarness("claude");
const META = "clankie/seat-call";

const screenOf = (fleet: HireFleet, paneId: string) =>
  execFileSync("tmux", ["-S", fleet.tmuxSocket, "capture-pane", "-p", "-t", paneId], { encoding: "utf8" });

describe.runIf(codex)("hire_agent failures with a real Codex", () => {
  let mock: MockResponsesServer;
  let env: HireEnv;
  let fleet: HireFleet;
  beforeAll(async () => {
    mock = await startMockResponsesServer();
    env = codexHireEnv(codex!, mock.baseUrl);
    fleet = await startHireFleet("pglite", { hire: { ...env.hire, readinessMs: 20_000 } });
  });
  afterAll(async () => {
    await fleet?.close();
    if (env)
      cleanupCodexEnv(codex!, {
        root: env.root,
        home: env.hire.env!.HOME!,
        codexHome: env.hire.env!.CODEX_HOME!,
        workDir: env.work,
        env: { ...env.hire.env },
      });
    await mock?.close();
  });

  it("an untrusted folder is trust_required: the prompt is left to the owner, never answered, and the pane stays", async () => {
    const untrusted = join(env.root, "untrusted");
    mkdirSync(untrusted);
    // Codex asks about trust for a repository it has no decision for.
    execFileSync("git", ["init", "-q", untrusted]);
    const hireId = randomUUID();
    const res = await fleet.lead.call(
      "hire_agent",
      { harness: "codex", workingDirectory: untrusted, title: "t", role: "r", brief: "never sent" },
      { [META]: { hireId } },
    );
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
      outcome: "failed",
      reason: "trust_required",
      hireId,
      launchCommitted: true,
      control: { reason: "trust_required" },
    });
    expect((res.structuredContent!.control as { fix: string }).fix).toMatch(/owner's decision/);
    const pane = fleet.panes().find((p) => p.hire === hireId);
    expect(pane).toBeDefined();
    expect(screenOf(fleet, pane!.paneId)).toMatch(/trust/i);
    expect(mock.countRequestsWith("never sent", "any")).toBe(0);
  });

  it("at_capacity launches nothing", async () => {
    const capped = await startHireFleet("pglite", { hire: { ...env.hire, maxHiredSeats: 0 } });
    try {
      const res = await capped.lead.call("hire_agent", {
        harness: "codex",
        workingDirectory: env.work,
        title: "t",
        role: "r",
      });
      expect(res.structuredContent).toMatchObject({ outcome: "failed", reason: "at_capacity", launchCommitted: false });
      expect((res.structuredContent!.control as { fix: string }).fix).toMatch(/limit/);
      expect(capped.panes()).toEqual([]);
    } finally {
      await capped.close();
    }
  });

  it("a Codex that exits at once (its config is broken) is launch_failed, and the hire closes the pane it opened", async () => {
    const brokenHome = join(env.root, "broken-home");
    mkdirSync(brokenHome);
    writeFileSync(join(brokenHome, "config.toml"), "this is = = not toml [[[\n");
    const broken = await startHireFleet("pglite", {
      hire: { ...env.hire, env: { ...env.hire.env, CODEX_HOME: brokenHome } },
    });
    try {
      const hireId = randomUUID();
      const res = await broken.lead.call(
        "hire_agent",
        { harness: "codex", workingDirectory: env.work, title: "t", role: "r" },
        { [META]: { hireId } },
      );
      expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
        outcome: "failed",
        reason: "launch_failed",
        hireId,
        launchCommitted: true,
      });
      expect(broken.panes().filter((p) => p.hire === hireId)).toEqual([]);
      expect(broken.launchedRoots(hireId)).toEqual([]);
    } finally {
      await broken.close();
    }
  });
});

describe.runIf(claude)("hire_agent failures with a real Claude Code", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let fleet: HireFleet;
  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    env = claudeHireEnv(claude!, mock.url);
    fleet = await startHireFleet("pglite", { hire: { ...env.hire, readinessMs: 10_000 } });
  });
  afterAll(async () => {
    await fleet?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it("a consent prompt nobody answers is not_ready with control.reason consent_required; the pane stays for the owner", async () => {
    const hireId = randomUUID();
    const res = await fleet.lead.call(
      "hire_agent",
      {
        harness: "claude",
        workingDirectory: env.work,
        title: "t",
        role: "r",
        brief: "waits for consent",
        model: env.model,
      },
      { [META]: { hireId } },
    );
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
      outcome: "failed",
      reason: "not_ready",
      hireId,
      control: { reason: "consent_required" },
    });
    const pane = fleet.panes().find((p) => p.hire === hireId);
    expect(pane).toBeDefined();
    expect(screenOf(fleet, pane!.paneId)).toMatch(/local development/i);
    expect(mock.userMessagesContaining("waits for consent")).toBe(0);
  });
});

describe.runIf(pi)("hire_agent capacity with a real Pi", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let fleet: HireFleet;
  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    env = piHireEnv(pi!, mock.url);
    fleet = await startHireFleet("pglite", { hire: { ...env.hire, maxHiredSeats: 1 } });
  });
  afterAll(async () => {
    await fleet?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true });
  });

  it("two hires at once with room for one: one spawns, the other is at_capacity and opens nothing", async () => {
    const a = { harness: "pi", workingDirectory: env.work, title: "a", role: "r", model: env.model };
    const [x, y] = await Promise.all([
      fleet.lead.call("hire_agent", a),
      fleet.lead.call("hire_agent", { ...a, title: "b" }),
    ]);
    const outcomes = [x, y].map((r) => r.structuredContent as { outcome: string; reason?: string; hireId: string });
    expect(outcomes.map((o) => o.reason ?? o.outcome).sort(), JSON.stringify(outcomes)).toEqual([
      "at_capacity",
      "spawned",
    ]);
    const refused = outcomes.find((o) => o.reason === "at_capacity")!;
    expect(fleet.panes().filter((p) => p.hire === refused.hireId)).toEqual([]);
    expect(fleet.panes().filter((p) => p.hire)).toHaveLength(1);
    const third = await fleet.lead.call("hire_agent", { ...a, title: "c" });
    expect(third.structuredContent).toMatchObject({ reason: "at_capacity" });
  });
});
