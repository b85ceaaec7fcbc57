/**
 * Issue 35 item 1 (rule 52's readiness bound): a hire is `spawned` only when the worker can
 * take a turn, on the real binaries in real tmux. A Pi with no API key for its model (Pi's own
 * get_state answer through the Clankie extension) and a Codex whose model server does not
 * answer (Codex's own "Reconnecting... waiting for network" for the brief's turn) each fail
 * `not_ready` with that evidence: the hire closes the pane it opened, no seat is left in
 * list_seats, the brief never reaches a model, and `hire-receipt list --state failed` shows the hire.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import { requireHarness } from "./kit/harness-bin.js";
import { failedReceipt, noSeatLeft } from "./kit/not-ready-checks.js";
import { codexHireEnv, piHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { cleanupCodexEnv } from "./kit/codex-env.js";

const pi = requireHarness("pi");
const codex = requireHarness("codex");
const META = "clankie/seat-call";

describe.runIf(pi)("hire_agent readiness: a real Pi with no API key for its model", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let fleet: HireFleet;
  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    env = piHireEnv(pi!, mock.url);
    // No models.json provider (a custom one must carry its key): Pi's own Anthropic model, and no key for it.
    rmSync(join(env.hire.env!.PI_CODING_AGENT_DIR!, "models.json"));
    fleet = await startHireFleet("pglite", { hire: env.hire });
  });
  afterAll(async () => {
    await fleet?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true });
  });

  it("is not_ready with Pi's own answer (no_api_key): the pane it opened is closed, no seat stays, the brief reaches no model", async () => {
    const hireId = randomUUID();
    const res = await fleet.lead.call(
      "hire_agent",
      {
        harness: "pi",
        workingDirectory: env.work,
        title: "keyless",
        role: "r",
        brief: "keyless brief",
        model: "anthropic/claude-sonnet-4-5",
      },
      { [META]: { hireId } },
    );
    const body = res.structuredContent as Record<string, unknown>;
    expect(body, JSON.stringify(body)).toMatchObject({
      outcome: "failed",
      reason: "not_ready",
      hireId,
      launchCommitted: true,
      control: { reason: "no_api_key" },
    });
    expect(String(body.detail)).toMatch(/no API key for its model anthropic\/claude-sonnet-4-5/);
    expect(fleet.panes().filter((p) => p.hire === hireId)).toEqual([]);
    expect(fleet.launchedRoots(hireId)).toEqual([]);
    await noSeatLeft(fleet, "pi");
    expect(mock.userMessagesContaining("keyless brief")).toBe(0);
    expect(await failedReceipt(fleet, hireId)).toMatchObject({ state: "failed", reason: "not_ready" });
  });

  it("with no model at all it is not_ready (no_model), and nothing stays either", async () => {
    const hireId = randomUUID();
    const res = await fleet.lead.call(
      "hire_agent",
      { harness: "pi", workingDirectory: env.work, title: "modelless", role: "r" },
      { [META]: { hireId } },
    );
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
      outcome: "failed",
      reason: "not_ready",
      control: { reason: "no_model" },
    });
    expect(fleet.panes().filter((p) => p.hire === hireId)).toEqual([]);
    await noSeatLeft(fleet, "pi");
  });
});

describe.runIf(codex)("hire_agent readiness: a real Codex whose model server does not answer", () => {
  let env: HireEnv;
  let fleet: HireFleet;
  beforeAll(async () => {
    // Port 9 (discard) has no listener here: every request Codex makes is refused.
    env = codexHireEnv(codex!, "http://127.0.0.1:9/v1");
    mkdirSync(env.work, { recursive: true });
    fleet = await startHireFleet("pglite", { hire: { ...env.hire, readinessMs: 25_000 } });
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
  });

  it("is not_ready with Codex's own words for the brief's turn (model_unreachable): the pane is closed and no seat stays", async () => {
    const hireId = randomUUID();
    const res = await fleet.lead.call(
      "hire_agent",
      { harness: "codex", workingDirectory: env.work, title: "serverless", role: "r", brief: "unreachable brief" },
      { [META]: { hireId } },
    );
    const body = res.structuredContent as Record<string, unknown>;
    expect(body, JSON.stringify(body)).toMatchObject({
      outcome: "failed",
      reason: "not_ready",
      hireId,
      launchCommitted: true,
      control: { reason: "model_unreachable" },
    });
    expect(String(body.detail)).toMatch(/Reconnecting\.\.\. waiting for network/);
    expect(fleet.panes().filter((p) => p.hire === hireId)).toEqual([]);
    await noSeatLeft(fleet, "codex");
    expect(await failedReceipt(fleet, hireId)).toMatchObject({ state: "failed", reason: "not_ready" });
  });
});
