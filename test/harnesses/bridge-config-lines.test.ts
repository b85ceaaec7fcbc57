/**
 * Issue 14 item 5 ("the printed config lines must work as printed"), for the lines `clankie up`
 * prints first: the stdio bridge (`claude mcp add --scope user clankie -- … mcp`, `codex mcp add
 * clankie -- … mcp`; for Codex, the [mcp_servers.clankie] table with required = true). `up` runs with its state dir chosen by CLANKIE_STATE_DIR, as `npm start`
 * users do; each exact printed line is then run by a shell whose environment has no
 * CLANKIE_STATE_DIR (a fresh HOME, as a harness started later has), and the real pinned Claude
 * Code and Codex start the bridge themselves: `claude mcp list` connects, `codex exec` offers the
 * controller's tools to the model (a local mock Responses server).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareStore } from "../kit/test-db.js";
import { CLI, assertBuilt } from "../kit/cli.js";
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

describe("the printed stdio-bridge lines, run as printed by the real Claude Code and Codex", () => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let up: ChildProcess;
  const printed: Record<string, string> = {};

  beforeAll(async () => {
    assertBuilt();
    store = await prepareStore("pglite");
    // Human output, state dir from the environment (not --state-dir), as `CLANKIE_STATE_DIR=… npm start` gives.
    up = spawn(process.execPath, [CLI, "up", "--port", "0", "--pane-host", "none", "--machine", "bridgebox"], {
      env: { ...process.env, DATABASE_URL: "", CLANKIE_STATE_DIR: store.stateDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: up.stdout! }).on("line", (l) => {
        const m = /^ {2}(Claude Code|Codex): {2,}(.*)$/.exec(l);
        if (m) printed[m[1]!] = m[2]!.trim();
        if (l.startsWith("Stop with Ctrl-C.")) resolve();
      });
      up.once("exit", (c) => reject(new Error(`up exited ${c}`)));
    });
  });
  afterAll(async () => {
    up?.kill("SIGTERM");
    await store?.cleanup();
  });

  it("the printed lines start the bridge with the state dir named, and hold no token", () => {
    expect(printed["Claude Code"]).toMatch(
      /^claude mcp add --scope user clankie -- \S+ \S+main\.js mcp --state-dir \S+$/,
    );
    expect(printed.Codex).toMatch(
      /^codex mcp remove clankie >\/dev\/null 2>&1; .*\[mcp_servers\.clankie\].*required = true.*'"\S+main\.js", "mcp", "--state-dir", "\S+"' >> .*config\.toml$/,
    );
    for (const l of Object.values(printed)) expect(l).not.toContain("lead_");
  });

  describe.runIf(claude || process.env.CLANKIE_REQUIRE_HARNESSES === "1")("Claude Code", () => {
    let home: string;
    beforeAll(() => {
      home = mkdtempSync(join(tmpdir(), "c14-bridge-claude-"));
    });
    afterAll(() => rmSync(home, { recursive: true, force: true }));

    it("the printed line adds a user-scope server that claude mcp list starts and connects to, from any folder", async () => {
      const env = { PATH: `${dirname(claude!)}:${process.env.PATH}`, HOME: home };
      const add = await sh(printed["Claude Code"]!, env, home);
      expect(add.code, add.stderr).toBe(0);
      expect((await sh("claude mcp get clankie", env, home)).stdout).toContain("Scope: User config");
      const elsewhere = mkdtempSync(join(home, "other-"));
      const list = await sh("claude mcp list", env, elsewhere);
      expect(list.stdout).toMatch(/clankie: \S+ \S+main\.js mcp --state-dir \S+ - . Connected/);
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

    it("the printed line adds a required stdio server (twice stays valid) that codex exec starts before its first turn: the model is offered the controller's tools", async () => {
      const { CLANKIE_STATE_DIR: _unset, ...cxEnv } = cx.env;
      void _unset;
      const env = { ...cxEnv, PATH: `${dirname(codex!)}:${process.env.PATH}` };
      // Pasted twice: still one table, a config Codex reads.
      for (let i = 0; i < 2; i++) {
        const add = await sh(printed.Codex!, env, cx.workDir);
        expect(add.code, add.stderr).toBe(0);
      }
      expect(readFileSync(join(cx.codexHome, "config.toml"), "utf8").match(/\[mcp_servers\.clankie\]/g)).toHaveLength(
        1,
      );
      const get = await sh("codex mcp get clankie --json", env, cx.workDir);
      expect(get.code, get.stderr).toBe(0);
      expect(JSON.parse(get.stdout)).toMatchObject({
        transport: { type: "stdio", args: [expect.stringMatching(/main\.js$/), "mcp", "--state-dir", store.stateDir] },
      });
      const run = await sh("codex exec --skip-git-repo-check 'list the seats' </dev/null", env, cx.workDir);
      expect(run.code, run.stderr).toBe(0);
      const req = await mock.waitFor((r) => r.lastUserText.includes("list the seats"));
      expect(
        req.toolNames.some((n) => n.includes("list_seats")),
        JSON.stringify(req.toolNames) + run.stderr,
      ).toBe(true);
      expect(req.toolNames.some((n) => n.includes("message_seat"))).toBe(true);
    });
  });
});
