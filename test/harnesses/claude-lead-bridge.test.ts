/**
 * A real Claude Code as a lead, end to end (issue 35 item 6; ADR 0207 VUH-1638, rule 30): the
 * lines `clankie up` prints for Claude Code — the stdio bridge (`claude mcp add --scope user
 * clankie -- … mcp`) and the HTTP line (`claude mcp add --transport http … --header …`) — are run
 * as printed by a shell in an empty HOME; then `claude -p`, whose mock model answers with a
 * tool call to message_seat and then one to reconcile_seat_call with the id it got back, makes
 * one delivery to a mailbox seat through the controller. The mailbox holds the message once,
 * and Claude Code's next model requests carry the controller's answers: delivered, under the
 * id the receipt holds, then the same receipt read back by reconcile.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { prepareStore } from "../kit/test-db.js";
import { CLI, assertBuilt, runCli } from "../kit/cli.js";
import { ownerOf } from "../kit/owner.js";
import {
  startMockAnthropicServer,
  type MockAnthropicServer,
  type RecordedRequest,
} from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";

const claude = requireHarness("claude");
const API_KEY = "sk-ant-api03-clankie-lead-test-0123456789abcdefghij";
const MESSAGE_SEAT = "mcp__clankie__message_seat";
const RECONCILE = "mcp__clankie__reconcile_seat_call";

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

/** The controller's answers among a turn's tool results (message_seat's, then reconcile_seat_call's). */
const answers = (r: RecordedRequest) => r.turnToolResults.filter((t) => /"deliveryId":\s*"/.test(t));

/**
 * The mock model's lead: message_seat with the quoted text, then reconcile_seat_call with the id
 * it answered. Claude Code 2.1.332 defers MCP tools behind ToolSearch (2.1.197 offered them
 * directly): the mock loads each by name first, as a real model does.
 */
function leadToolUse(r: RecordedRequest) {
  // Any user text of the request: a ToolSearch result may come back as a user message with text of its own.
  const said = r.userTexts.map((t) => /Tell the inbox seat "([^"]+)"/.exec(t)?.[1]).find(Boolean);
  if (!said) return undefined;
  const got = answers(r);
  if (got.length === 0 && r.toolNames.includes(MESSAGE_SEAT))
    return { name: MESSAGE_SEAT, input: { seat: "inbox", message: said } };
  const id = got.length === 1 ? /"deliveryId":\s*"([^"]+)"/.exec(got[0]!)?.[1] : undefined;
  return id ? { name: RECONCILE, input: { deliveryId: id } } : undefined;
}

/** The first request that offered message_seat (after ToolSearch loaded it, on versions that defer MCP tools). */
const afterToolSearchOrFirst = (turn: RecordedRequest[]) => turn.find((r) => r.toolNames.includes(MESSAGE_SEAT));

describe("a real Claude Code lead calls message_seat, then reconcile_seat_call, configured by the lines `clankie up` prints", () => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let up: ChildProcess;
  let mock: MockAnthropicServer;
  const printed: Record<string, string> = {};
  const homes: string[] = [];
  const env = { DATABASE_URL: "", CLANKIE_STATE_DIR: "" };

  beforeAll(async () => {
    if (!claude)
      throw new Error("claude is not installed in .harnesses/claude: run `npm run harnesses:install -- claude`");
    assertBuilt();
    store = await prepareStore("pglite");
    env.CLANKIE_STATE_DIR = store.stateDir;
    // Human output, as an owner reads it: both the bridge lines and the HTTP lines.
    up = spawn(process.execPath, [CLI, "up", "--port", "0", "--pane-host", "none", "--machine", "leadbox"], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: up.stdout! }).on("line", (l) => {
        const m = /^ {2}(Claude Code|Codex|Claude Code \(HTTP\)|Codex \(HTTP\)): {2,}(.*)$/.exec(l);
        if (m) printed[m[1]!] = m[2]!.trim();
        if (l.startsWith("Stop with Ctrl-C.")) resolve();
      });
      up.once("exit", (c) => reject(new Error(`up exited ${c}`)));
    });
    const add = await runCli(["seat", "add", "mailbox", "inbox"], env);
    expect(add.code, add.stderr).toBe(0);
    mock = await startMockAnthropicServer({ toolUse: leadToolUse, chainTools: true, reply: () => "told the inbox" });
  });
  afterAll(async () => {
    up?.kill("SIGTERM");
    await mock?.close();
    for (const h of homes) rmSync(h, { recursive: true, force: true });
    await store?.cleanup();
  });

  const mailboxEntries = (text: string) =>
    new MailboxStore(join(store.stateDir, "agent", "mailboxes")).list("inbox").entries.filter((e) => e.text === text);

  /** Runs the printed line in a fresh HOME, then one `claude -p` turn that tells the inbox `text`. */
  async function leadTurn(line: string, text: string) {
    const home = mkdtempSync(join(tmpdir(), "clankie-claude-lead-"));
    homes.push(home);
    // No CLANKIE_STATE_DIR or token in this environment: the printed line carries what Claude needs.
    const shell = { PATH: `${dirname(claude!)}:${process.env.PATH}`, HOME: home };
    const add = await sh(line, shell, home);
    expect(add.code, add.stderr).toBe(0);
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(
        claude!,
        [
          "-p",
          `Tell the inbox seat "${text}"`,
          "--model",
          "claude-sonnet-4-6",
          // The owner's own approval of the two tools: print mode has no one to ask.
          "--allowedTools",
          `${MESSAGE_SEAT},${RECONCILE}`,
        ],
        {
          cwd: home,
          env: { ...shell, ANTHROPIC_BASE_URL: mock.url, ANTHROPIC_API_KEY: API_KEY, DISABLE_AUTOUPDATER: "1" },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => child.kill("SIGKILL"), 100_000);
      child.once("exit", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
    const turn = mock.requests.filter((r) => r.userTexts.some((t) => t.includes(`Tell the inbox seat "${text}"`)));
    return { run, turn, home };
  }

  async function expectOneDeliveryAndAnswers(line: string, text: string) {
    const { run, turn } = await leadTurn(line, text);
    const why = JSON.stringify({
      run: { code: run.code, stdout: run.stdout.slice(-1500), stderr: run.stderr.slice(-1500) },
      turn: turn.map((r) => ({
        tools: r.toolNames,
        latest: r.latestUserText.slice(-300),
        results: r.turnToolResults.map((t) => t.slice(0, 400)),
      })),
    });
    expect(
      turn.some((r) => r.toolNames.includes(MESSAGE_SEAT)),
      why,
    ).toBe(true);
    expect(afterToolSearchOrFirst(turn), why).toBeDefined();
    const entries = mailboxEntries(text);
    expect(entries, why).toHaveLength(1);
    const id = entries[0]!.deliveryId;
    // The request after the message_seat call holds the controller's result: delivered, under the receipt's id.
    const afterSend = turn.find((r) => answers(r).length === 1);
    expect(answers(afterSend!)[0], why).toContain('"outcome":"delivered"');
    expect(answers(afterSend!)[0]).toContain(id);
    // The request after reconcile_seat_call holds the same receipt, read back, in this conversation.
    const afterReconcile = turn.find((r) => answers(r).length === 2);
    expect(answers(afterReconcile!)[1], why).toContain(id);
    expect(answers(afterReconcile!)[1]).toContain('"outcome":"delivered"');
    expect(run.code, why).toBe(0);
    expect(run.stdout).toContain("told the inbox");
    return id;
  }

  it("through the printed stdio bridge line: one message reaches the mailbox once, and Claude's next requests hold the delivered result and its reconcile", async () => {
    expect(printed["Claude Code"]).toMatch(
      /^claude mcp add --scope user clankie -- \S+ \S+main\.js mcp --state-dir \S+$/,
    );
    const id = await expectOneDeliveryAndAnswers(printed["Claude Code"]!, "hello from a Claude lead over the bridge");
    const owner = ownerOf(
      new URL(/ (http:\S+\/mcp) /.exec(printed["Claude Code (HTTP)"]!)![1]!).origin,
      readFileSync(join(store.stateDir, "owner.token"), "utf8").trim(),
    );
    expect((await owner.receipts()).filter((r) => r.deliveryId === id)).toHaveLength(1);
  });

  it("through the printed HTTP line (token in Claude's own config): one delivery, and the answers reach the model", async () => {
    expect(printed["Claude Code (HTTP)"]).toMatch(
      /^claude mcp add --transport http --scope user clankie http:\S+\/mcp --header "Authorization: Bearer \S+"$/,
    );
    await expectOneDeliveryAndAnswers(printed["Claude Code (HTTP)"]!, "hello from a Claude lead over HTTP");
  });
});
