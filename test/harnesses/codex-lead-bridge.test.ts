/**
 * A real lead end to end (issue 13, ADR 0207 VUH-1638): a real Codex, configured exactly as
 * `clankie up` prints (its MCP server is the stdio bridge `clankie mcp`, command + args, no
 * token), whose mock model answers with a message_seat tool call, makes one delivery to a
 * mailbox seat through the bridge and the controller. What Codex got back is read from the
 * next model request: the controller's result, with the id the bridge minted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type RunningController } from "../../controller/main.js";
import { compileAgentConfig } from "../../node-agent/config.js";
import { startAgent, type RunningAgent } from "../../node-agent/main.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { silentLogger } from "../../shared/logger.js";
import { prepareStore } from "../kit/test-db.js";
import { ownerOf } from "../kit/owner.js";
import { assertBuilt, CLI } from "../kit/cli.js";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, type CodexEnv } from "./kit/codex-env.js";

const bin = requireHarness("codex");
const TEXT = "hello from a real Codex lead";

describe("a real Codex lead calls message_seat through `clankie mcp`", () => {
  let mock: MockResponsesServer;
  let cx: CodexEnv;
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let controller: RunningController;
  let agent: RunningAgent;

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    assertBuilt();
    store = await prepareStore("pglite");
    controller = await startController(
      compileControllerConfig({
        stateDir: store.stateDir,
        port: 0,
        databaseUrl: store.databaseUrl,
        heartbeatIntervalMs: 1000,
      }),
      silentLogger,
    );
    agent = await startAgent(
      {
        ...compileAgentConfig({
          stateDir: join(store.stateDir, "agent"),
          controllerUrl: controller.agentUrl,
          machine: "leadbox",
        }),
        joinToken: await controller.issueJoinToken("leadbox"),
      },
      silentLogger,
    );
    await agent.linked;
    await ownerOf(controller.url, controller.ownerToken).addMailbox("inbox");
    mock = await startMockResponsesServer({
      reply: "sent",
      toolCall: (r) => {
        const name = r.toolNames.find((n) => n === "mcp__clankie/message_seat");
        return name ? { name, arguments: { seat: "inbox", message: TEXT } } : undefined;
      },
    });
    cx = makeCodexEnv(bin!, mock.baseUrl);
    // Exactly the command `clankie up` prints for this state directory, from the built CLI.
    const { bridgeCommand } = (await import(
      new URL("./lead-configs.js", pathToFileURL(CLI)).href
    )) as typeof import("../../cli/lead-configs.js");
    const b = bridgeCommand(store.stateDir);
    expect(b.args[0]).toBe(CLI);
    const toml = (s: string) => JSON.stringify(s);
    appendFileSync(
      join(cx.codexHome, "config.toml"),
      // required: the first turn waits for the bridge's tools; approve: `codex exec` has no one to ask.
      [
        "",
        "[mcp_servers.clankie]",
        `command = ${toml(b.command)}`,
        `args = [${b.args.map(toml).join(", ")}]`,
        "startup_timeout_sec = 20",
        "tool_timeout_sec = 60",
        "required = true",
        'default_tools_approval_mode = "approve"',
        "",
      ].join("\n"),
    );
  });

  afterAll(async () => {
    if (cx) cleanupCodexEnv(bin!, cx);
    await mock?.close();
    await agent?.close();
    await controller?.close();
    await store?.cleanup();
  });

  it("one message_seat reaches the mailbox once, and Codex receives the controller's delivered result with the bridge-minted id", async () => {
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      // stdin closed: codex exec otherwise waits for more prompt on it.
      const child = spawn(bin!, ["exec", "--skip-git-repo-check", "-C", cx.workDir, "Tell the inbox seat hello."], {
        env: cx.env,
        cwd: cx.workDir,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
      child.once("exit", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
    const first = mock.requests[0];
    expect(
      first?.toolNames.some((n) => n.endsWith("message_seat")),
      JSON.stringify({ tools: first?.toolNames, stderr: run.stderr.slice(-3000) }),
    ).toBe(true);
    const entries = new MailboxStore(join(store.stateDir, "agent", "mailboxes"))
      .list("inbox")
      .entries.filter((e) => e.text === TEXT);
    expect(entries, run.stderr.slice(-3000)).toHaveLength(1);
    const output = mock.requests.flatMap((r) => r.toolOutputs).at(0)?.output ?? "";
    expect(output, JSON.stringify(mock.requests.map((r) => r.toolOutputs))).toContain('"outcome":"delivered"');
    expect(output).toContain(entries[0]!.deliveryId);
    const receipts = await ownerOf(controller.url, controller.ownerToken).receipts();
    expect(receipts.filter((r) => r.seatId === "leadbox/inbox")).toHaveLength(1);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
  });
});
