/**
 * Issue 35 item 1 (rule 52's readiness bound) for Claude Code and OpenCode, on the pinned real
 * binaries in real tmux: a hire is `spawned` only when the worker can take a turn. Each harness's
 * own answer decides. OpenCode: `/config/providers` lists no provider for the configured model
 * (no key), or `/session/status` retries the brief's turn with "Cannot connect to API". Claude
 * Code: its status line "Not logged in · run /login" (no key, no login), or "Connection refused …
 * retrying in" for the brief's turn. Each fails `not_ready` with that evidence: the pane it opened
 * is closed, no seat is left in list_seats, and `hire-receipt list --state failed` shows the hire.
 */
import { randomUUID } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import { requireHarness } from "./kit/harness-bin.js";
import { failedReceipt, noSeatLeft } from "./kit/not-ready-checks.js";
import { claudeHireEnv, openCodeHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { ownerConfirmsDevChannel } from "./kit/owner-confirms.js";

const opencode = requireHarness("opencode");
const claude = requireHarness("claude");
const META = "clankie/seat-call";
/** Port 9 (discard) has no listener here: every request to it is refused. */
const NOWHERE = "http://127.0.0.1:9";

async function hireFails(
  fleet: HireFleet,
  args: Record<string, unknown>,
  reason: string,
): Promise<{ hireId: string; detail: string }> {
  const hireId = randomUUID();
  const res = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
  const body = res.structuredContent as Record<string, unknown>;
  expect(body, JSON.stringify(body)).toMatchObject({
    outcome: "failed",
    reason: "not_ready",
    hireId,
    launchCommitted: true,
    control: { reason },
  });
  expect(fleet.panes().filter((p) => p.hire === hireId)).toEqual([]);
  return { hireId, detail: String(body.detail) };
}

/** OpenCode's config: MODEL as the configured model, PROVIDER (if any) its only custom provider. */
function openCodeConfig(env: HireEnv, model: string, provider?: { id: string; baseURL: string }): void {
  const c = env.hire.env!;
  writeFileSync(
    join(c.XDG_CONFIG_HOME!, "opencode/opencode.json"),
    JSON.stringify({
      $schema: "https://opencode.ai/config.json",
      model,
      small_model: model,
      autoupdate: false,
      share: "disabled",
      ...(provider
        ? {
            provider: {
              [provider.id]: {
                npm: "@ai-sdk/anthropic",
                name: "Mock",
                options: { baseURL: provider.baseURL, apiKey: "sk-mock" },
                models: { "mock-model": { name: "Mock" } },
              },
            },
          }
        : {}),
    }),
  );
}

describe.runIf(opencode)("hire_agent readiness: a real OpenCode that cannot take a turn", () => {
  let env: HireEnv;
  let fleet: HireFleet;
  beforeAll(async () => {
    env = openCodeHireEnv(opencode!, NOWHERE);
    // OpenCode's first start loads its whole provider catalog: ~30 s on a busy 2-core box.
    fleet = await startHireFleet("pglite", { hire: { ...env.hire, readinessMs: 45_000 } });
  });
  afterAll(async () => {
    await fleet?.close();
    if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it("issue 35 item 1: no key for its model's provider is not_ready (no_api_key) from /config/providers; nothing stays", async () => {
    openCodeConfig(env, "anthropic/claude-sonnet-4-5");
    const { hireId, detail } = await hireFails(
      fleet,
      { harness: "opencode", workingDirectory: env.work, title: "keyless", role: "r", brief: "keyless brief" },
      "no_api_key",
    );
    expect(detail).toMatch(/\/config\/providers lists no provider anthropic .*model anthropic\/claude-sonnet-4-5/);
    await noSeatLeft(fleet, "opencode");
    expect(await failedReceipt(fleet, hireId)).toMatchObject({ state: "failed", reason: "not_ready" });
  });

  it("issue 35 item 1: a model server that does not answer is not_ready (model_unreachable) from OpenCode's retry status of the brief's turn", async () => {
    openCodeConfig(env, "mock/mock-model", { id: "mock", baseURL: `${NOWHERE}/v1` });
    const { hireId, detail } = await hireFails(
      fleet,
      { harness: "opencode", workingDirectory: env.work, title: "serverless", role: "r", brief: "unreachable brief" },
      "model_unreachable",
    );
    expect(detail).toMatch(/took the brief .*Cannot connect to API/);
    await noSeatLeft(fleet, "opencode");
    expect(await failedReceipt(fleet, hireId)).toMatchObject({ state: "failed", reason: "not_ready" });
  });
});

describe.runIf(claude)("hire_agent readiness: a real Claude Code that cannot take a turn", () => {
  let keyless: HireEnv;
  let fleet: HireFleet;
  let stopOwner: () => void;
  beforeAll(async () => {
    keyless = claudeHireEnv(claude!, NOWHERE);
    delete keyless.hire.env!.ANTHROPIC_API_KEY;
    fleet = await startHireFleet("pglite", { hire: { ...keyless.hire, readinessMs: 25_000 } });
    stopOwner = ownerConfirmsDevChannel(fleet);
  });
  afterAll(async () => {
    stopOwner?.();
    await fleet?.close();
    if (keyless) rmSync(keyless.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it("issue 35 item 1: no key and no login is not_ready (no_auth) from Claude's own status line; nothing stays", async () => {
    const { hireId, detail } = await hireFails(
      fleet,
      { harness: "claude", workingDirectory: keyless.work, title: "keyless", role: "r", brief: "keyless brief" },
      "no_auth",
    );
    expect(detail).toMatch(/Not logged in · (Please )?run \/login/);
    await noSeatLeft(fleet, "claude");
    expect(await failedReceipt(fleet, hireId)).toMatchObject({ state: "failed", reason: "not_ready" });
  });
});

describe.runIf(claude)("hire_agent readiness: a real Claude Code whose model server does not answer", () => {
  let serverless: HireEnv;
  let fleet: HireFleet;
  let stopOwner: () => void;
  beforeAll(async () => {
    serverless = claudeHireEnv(claude!, NOWHERE);
    fleet = await startHireFleet("pglite", { hire: { ...serverless.hire, readinessMs: 25_000 } });
    stopOwner = ownerConfirmsDevChannel(fleet);
  });
  afterAll(async () => {
    stopOwner?.();
    await fleet?.close();
    if (serverless) rmSync(serverless.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it("issue 35 item 1: is not_ready (model_unreachable) from Claude's own retry line for the brief's turn; nothing stays", async () => {
    const { hireId, detail } = await hireFails(
      fleet,
      { harness: "claude", workingDirectory: serverless.work, title: "serverless", role: "r", brief: "unreachable" },
      "model_unreachable",
    );
    expect(detail).toMatch(/took the brief .*Connection refused.*retrying in/);
    await noSeatLeft(fleet, "claude");
    expect(await failedReceipt(fleet, hireId)).toMatchObject({ state: "failed", reason: "not_ready" });
  });
});
