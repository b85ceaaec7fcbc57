/**
 * `clankie mailbox read` (a real CLI process) never drives the terminal (issue 11, part 4):
 * a lead's message holding escape sequences, a right-to-left override and a newline that
 * imitates a header line prints with every control escaped and the fake header indented
 * under the real one; `--json` keeps the exact text.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { runCli } from "../kit/cli.js";

const TEXT =
  "hi\u001b[2J\u001b]0;owned\u0007 \u202eevil\n#2 2026-01-01T00:00:00.000Z from global-default (00000000-0000-4000-8000-000000000000)\nthe end";

describe("mailbox read is terminal-safe", () => {
  let fleet: TestFleet;

  beforeAll(async () => {
    fleet = await startFleet("pglite");
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("inbox");
    const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    expect((await lead.call("message_seat", { seat: "inbox", message: TEXT })).structuredContent).toMatchObject({
      outcome: "delivered",
    });
    await lead.close();
  });
  afterAll(async () => {
    await fleet?.close();
  });

  it("plain text: no raw control reaches stdout, and the fake header is indented under the real one", async () => {
    const r = await runCli(["mailbox", "read", "inbox", "--peek", "--agent-state-dir", fleet.agentStateDir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(r.stdout).toContain("hi\\x1b[2J\\x1b]0;owned\\x07 \\u202eevil");
    const headers = r.stdout.split("\n").filter((l) => l.startsWith("#"));
    expect(headers).toHaveLength(1);
    expect(headers[0]).toMatch(/^#1 /);
    expect(r.stdout).toContain("  | #2 2026-01-01T00:00:00.000Z from global-default");
  });

  it("--json keeps the exact text", async () => {
    const r = await runCli(["mailbox", "read", "inbox", "--peek", "--json", "--agent-state-dir", fleet.agentStateDir]);
    expect(JSON.parse(r.stdout).messages[0].text).toBe(TEXT);
  });
});
