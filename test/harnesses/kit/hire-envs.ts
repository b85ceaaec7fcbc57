/**
 * Launch environments for hiring each real harness against the local mock model servers:
 * every home under a temp dir, the provider pointed at the mock, and (Claude, Codex) the
 * work folder pre-trusted in the harness's own config, as an owner would have decided.
 * TEST-ONLY (Claude): the channel's remote flag cache seeded as in claude-tui.ts.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HireOptions } from "../../../node-agent/hire/hire.js";

export interface HireEnv {
  root: string;
  work: string;
  hire: HireOptions;
  /** The model argument hire_agent passes, where the harness needs one. */
  model?: string;
}

function base(prefix: string): { root: string; work: string; home: string } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const work = join(root, "w");
  const home = join(root, "h");
  for (const d of [work, home]) mkdirSync(d, { recursive: true });
  return { root, work, home };
}

const common = (root: string, home: string) => ({
  HOME: home,
  XDG_CONFIG_HOME: join(root, "xc"),
  XDG_DATA_HOME: join(root, "xd"),
  XDG_CACHE_HOME: join(root, "xk"),
  XDG_STATE_HOME: join(root, "xs"),
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  TERM: "xterm-256color",
  LANG: "C.UTF-8",
});

export function piHireEnv(bin: string, mockUrl: string): HireEnv {
  const { root, work, home } = base("hpi-");
  const agentDir = join(home, ".pi/agent");
  mkdirSync(agentDir, { recursive: true });
  writeFileSync(
    join(agentDir, "models.json"),
    JSON.stringify({
      providers: {
        mock: { baseUrl: mockUrl, api: "anthropic-messages", apiKey: "sk-mock", models: [{ id: "mock-model" }] },
      },
    }),
  );
  return {
    root,
    work,
    model: "mock/mock-model",
    hire: { bins: { pi: bin }, env: { ...common(root, home), PI_CODING_AGENT_DIR: agentDir } },
  };
}

export function codexHireEnv(bin: string, mockBaseUrl: string): HireEnv {
  const { root, work, home } = base("hcx-");
  const codexHome = join(root, "c");
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, "config.toml"),
    [
      'model = "mock-model"',
      'model_provider = "mock"',
      'approval_policy = "never"',
      'sandbox_mode = "read-only"',
      "[model_providers.mock]",
      'name = "Local mock"',
      `base_url = "${mockBaseUrl}"`,
      'wire_api = "responses"',
      'env_key = "MOCK_API_KEY"',
      "request_max_retries = 0",
      "stream_max_retries = 0",
      "stream_idle_timeout_ms = 60000",
      `[projects."${work}"]`,
      'trust_level = "trusted"',
      "",
    ].join("\n"),
  );
  return {
    root,
    work,
    hire: {
      bins: { codex: bin },
      env: { ...common(root, home), CODEX_HOME: codexHome, MOCK_API_KEY: "mock-key", CLANKIE_TEST_CODEX_ROOT: root },
    },
  };
}

export function claudeHireEnv(bin: string, mockUrl: string): HireEnv {
  const { root, work, home } = base("hcl-");
  const config = join(root, "cfg");
  mkdirSync(config, { recursive: true });
  const apiKey = "sk-ant-api03-clankie-test-key-0123456789abcdefghij";
  writeFileSync(
    join(config, ".claude.json"),
    JSON.stringify({
      hasCompletedOnboarding: true,
      projects: { [work]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
      customApiKeyResponses: { approved: [apiKey.slice(-20)], rejected: [] },
      cachedGrowthBookFeatures: { tengu_harbor: true, tengu_harbor_permissions: true },
    }),
  );
  return {
    root,
    work,
    model: "claude-sonnet-4-5",
    hire: {
      bins: { claude: bin },
      claudeChannel: "development",
      env: {
        ...common(root, home),
        CLAUDE_CONFIG_DIR: config,
        ANTHROPIC_BASE_URL: mockUrl,
        ANTHROPIC_API_KEY: apiKey,
        DISABLE_AUTOUPDATER: "1",
      },
    },
  };
}

export function openCodeHireEnv(bin: string, mockUrl: string): HireEnv {
  const { root, work, home } = base("hoc-");
  const env = common(root, home);
  mkdirSync(join(env.XDG_CONFIG_HOME, "opencode"), { recursive: true });
  writeFileSync(
    join(env.XDG_CONFIG_HOME, "opencode/opencode.json"),
    JSON.stringify({
      $schema: "https://opencode.ai/config.json",
      model: "mock/mock-model",
      small_model: "mock/mock-model",
      autoupdate: false,
      share: "disabled",
      provider: {
        mock: {
          npm: "@ai-sdk/anthropic",
          name: "Mock",
          options: { baseURL: `${mockUrl}/v1`, apiKey: "sk-mock" },
          models: { "mock-model": { name: "Mock" } },
        },
      },
    }),
  );
  return { root, work, model: "mock/mock-model", hire: { bins: { opencode: bin }, env } };
}
