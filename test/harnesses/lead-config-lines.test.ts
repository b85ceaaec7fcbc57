/**
 * "Connect a lead in one paste", with the real pinned Claude Code and Codex binaries: the exact
 * lines `clankie lead token` prints (the same lines `clankie up` prints) are run by a shell in an
 * empty HOME, and then each client itself connects to the controller with the token it stored:
 * `claude mcp list` health-checks the server (Connected), and `codex exec` lists the controller's
 * tools to the model (read from the local mock Responses server). Pasting the Codex line twice
 * leaves a config Codex still reads. A wrong token is refused with a Bearer challenge whose
 * protected-resource metadata says: bearer token, no OAuth.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareStore } from "../kit/test-db.js";
import { runCli, startUp, type UpProcess } from "../kit/cli.js";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, type CodexEnv } from "./kit/codex-env.js";

const claude = requireHarness("claude");
const codex = requireHarness("codex");

function sh(
  line: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("/bin/sh", ["-c", line], { env, cwd, timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe("the printed lead config lines, run by the real Claude Code and Codex", () => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let up: UpProcess;
  let printed: { claude: string; codex: string; token: string; mcpUrl: string };

  beforeAll(async () => {
    store = await prepareStore("pglite");
    up = await startUp(["--state-dir", store.stateDir, "--port", "0", "--pane-host", "none"], { DATABASE_URL: "" });
    const res = await runCli(["lead", "token", "--conversation", "paste-test", "--state-dir", store.stateDir], {
      DATABASE_URL: "",
    });
    expect(res.code).toBe(0);
    const line = (label: string) =>
      res.stdout
        .split("\n")
        .find((l) => l.startsWith(label))!
        .slice(label.length)
        .trim();
    printed = { claude: line("Claude Code:"), codex: line("Codex:"), token: line("token"), mcpUrl: line("MCP") };
  });
  afterAll(async () => {
    await up?.stop();
    await store?.cleanup();
  });

  describe.runIf(claude || process.env.CLANKIE_REQUIRE_HARNESSES === "1")("Claude Code", () => {
    let home: string;
    beforeAll(() => {
      home = mkdtempSync(join(tmpdir(), "c14-claude-"));
    });
    afterAll(() => rmSync(home, { recursive: true, force: true }));

    it("the printed line (--scope user) adds the server, and claude mcp list connects with the stored token", async () => {
      expect(printed.claude).toContain("--scope user");
      const env = { PATH: `${dirname(claude!)}:${process.env.PATH}`, HOME: home };
      const add = await sh(printed.claude, env, home);
      expect(add.code, add.stderr).toBe(0);
      const list = await sh("claude mcp list", env, home);
      expect(list.stdout).toMatch(
        new RegExp(`clankie: ${printed.mcpUrl.replace(/[.]/g, "\\.")} \\(HTTP\\) - . Connected`),
      );
      const get = await sh("claude mcp get clankie", env, home);
      expect(get.stdout).toContain("Scope: User config");
      // From another folder too: user scope is every project.
      const elsewhere = mkdtempSync(join(home, "other-"));
      expect((await sh("claude mcp list", env, elsewhere)).stdout).toMatch(/clankie: .* Connected/);
    });

    it("a wrong token fails to connect, and the 401 explains itself: Bearer challenge, metadata that says no OAuth", async () => {
      const env = { PATH: `${dirname(claude!)}:${process.env.PATH}`, HOME: home };
      await sh("claude mcp remove clankie -s user", env, home);
      const wrong = printed.claude.replace(printed.token, "lead_not-the-token");
      expect((await sh(wrong, env, home)).code).toBe(0);
      expect((await sh("claude mcp list", env, home)).stdout).toMatch(/clankie: .* Failed to connect/);
      const res = await fetch(printed.mcpUrl, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer lead_not-the-token" },
        body: "{}",
      });
      expect(res.status).toBe(401);
      const challenge = res.headers.get("www-authenticate")!;
      expect(challenge).toMatch(
        /^Bearer realm="clankie", error="invalid_token", error_description="wrong lead token: .*does not do OAuth", resource_metadata="(http:[^"]+)"$/,
      );
      const meta = (await (await fetch(/resource_metadata="([^"]+)"/.exec(challenge)![1]!)).json()) as Record<
        string,
        unknown
      >;
      expect(meta).toMatchObject({
        resource: printed.mcpUrl,
        authorization_servers: [],
        bearer_methods_supported: ["header"],
      });
      const as = await fetch(new URL("/.well-known/oauth-authorization-server", printed.mcpUrl));
      expect(as.status).toBe(404);
      expect(((await as.json()) as { error_description: string }).error_description).toMatch(
        /no OAuth authorization server/,
      );
    });
  });

  describe.runIf(codex || process.env.CLANKIE_REQUIRE_HARNESSES === "1")("Codex", () => {
    let mock: MockResponsesServer;
    let cx: CodexEnv;
    beforeAll(async () => {
      mock = await startMockResponsesServer({ reply: "ok" });
      cx = makeCodexEnv(codex!, mock.baseUrl);
    });
    afterAll(async () => {
      if (cx) cleanupCodexEnv(codex!, cx);
      await mock?.close();
    });

    it("the printed line stores the token in config.toml (twice stays valid), and codex exec offers the controller's tools", async () => {
      const env = { ...cx.env, PATH: `${dirname(codex!)}:${process.env.PATH}` };
      for (let i = 0; i < 2; i++) {
        const paste = await sh(printed.codex, env, cx.workDir);
        expect(paste.code, paste.stderr).toBe(0);
      }
      const config = readFileSync(join(cx.codexHome, "config.toml"), "utf8");
      expect(config.match(/\[mcp_servers\.clankie\]/g)).toHaveLength(1);
      const get = await sh("codex mcp get clankie --json", env, cx.workDir);
      expect(get.code, get.stderr).toBe(0);
      expect(JSON.parse(get.stdout).transport).toMatchObject({
        type: "streamable_http",
        url: printed.mcpUrl,
        http_headers: { Authorization: `Bearer ${printed.token}` },
      });
      // No CLANKIE_TOKEN or any other variable: the token comes from Codex's own config.
      const run = await sh("codex exec --skip-git-repo-check 'list the seats' </dev/null", env, cx.workDir);
      expect(run.code, run.stderr).toBe(0);
      const req = await mock.waitFor((r) => r.lastUserText.includes("list the seats"));
      expect(
        req.toolNames.some((n) => n.includes("list_seats")),
        JSON.stringify(req.toolNames),
      ).toBe(true);
      expect(req.toolNames.some((n) => n.includes("message_seat"))).toBe(true);
    });
  });
});
