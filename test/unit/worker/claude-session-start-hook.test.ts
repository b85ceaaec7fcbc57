/** The SessionStart hook's decision: a restart command only for a linked, interactive Claude without the channel opt-in. */
import { describe, expect, it } from "vitest";
import { decideSessionStart, type ProcessRow } from "../../../worker/claude-session-start-hook.js";

const SID = "17f0a106-f97a-4290-94e2-7f31f082a200";
const input = { hook_event_name: "SessionStart", session_id: SID, transcript_path: "/t.jsonl", source: "startup" };
const tree = (claudeArgv: string[]): ProcessRow[] => [
  { pid: 300, argv: ["/bin/sh", "-c", "clankie worker session-start-hook"] },
  { pid: 200, argv: claudeArgv },
  { pid: 100, argv: ["bash"] },
];
const linked = { HERDR_PANE_ID: "w1:p1" };

describe("claude-session-start-hook.decideSessionStart", () => {
  it("a linked pane's Claude without the opt-in gets the exact-session restart command", () => {
    const d = decideSessionStart(input, linked, tree(["/usr/bin/claude"]));
    expect(d.claudePid).toBe(200);
    expect(d.message).toContain(`claude --resume ${SID} --dangerously-load-development-channels server:clankie-seat`);
  });

  it("the development opt-in and the plugin opt-in both suppress the notice", () => {
    expect(
      decideSessionStart(
        input,
        linked,
        tree(["claude", "--dangerously-load-development-channels", "server:clankie-seat"]),
      ).message,
    ).toBeUndefined();
    expect(
      decideSessionStart(input, linked, tree(["claude", "--channels", "plugin:clankie-worker@clankie"])).message,
    ).toBeUndefined();
  });

  it("issue 12 (plugin mode): the clankie-worker plugin under the development flag is the opt-in too, and a hook run from the plugin names the plugin in its restart command", () => {
    expect(
      decideSessionStart(
        input,
        linked,
        tree(["claude", "--dangerously-load-development-channels", "plugin:clankie-worker@clankie"]),
      ).message,
    ).toBeUndefined();
    const d = decideSessionStart(
      input,
      { ...linked, CLAUDE_PLUGIN_ROOT: "/cfg/plugins/cache/clankie/clankie-worker/0.1.0" },
      tree(["/usr/bin/claude"]),
    );
    expect(d.message).toContain(
      `claude --resume ${SID} --dangerously-load-development-channels plugin:clankie-worker@clankie`,
    );
  });

  it("an unrelated channel plugin does not count as the opt-in", () => {
    expect(
      decideSessionStart(input, linked, tree(["claude", "--channels", "plugin:other@market"])).message,
    ).toBeDefined();
  });

  it("print mode, other harnesses, unlinked panes, other hook events and unsafe ids get nothing", () => {
    expect(decideSessionStart(input, linked, tree(["claude", "-p", "hi"]))).toEqual({});
    expect(decideSessionStart(input, linked, tree(["/usr/bin/codex"]))).toEqual({});
    expect(decideSessionStart(input, {}, tree(["claude"])).message).toBeUndefined();
    expect(decideSessionStart({ ...input, hook_event_name: "Stop" }, linked, tree(["claude"]))).toEqual({});
    expect(decideSessionStart({ ...input, session_id: "x; rm -rf ~" }, linked, tree(["claude"]))).toEqual({});
  });

  it("when the Claude process cannot be observed, a linked pane is told the channel cannot be confirmed", () => {
    expect(decideSessionStart(input, linked, undefined).message).toContain("cannot confirm");
    expect(decideSessionStart(input, {}, undefined)).toEqual({});
  });

  it("issue 35 item 4: a session Claude handed its own inbox (socket and token, CLAUDE_PID naming it) is reachable as it is: no restart command, the inbox filed", () => {
    const inbox = {
      CLAUDE_CODE_MESSAGING_SOCKET: "/run/user/0/cc-socks/200.sock",
      CLAUDE_CODE_MESSAGING_TOKEN: "940b0e024f7569887cb51430efc25a36",
      CLAUDE_PID: "200",
      CLAUDE_CODE_SESSION_ID: SID,
    };
    const d = decideSessionStart(input, { ...linked, ...inbox }, tree(["/usr/bin/claude"]));
    expect(d).toEqual({
      claudePid: 200,
      inbox: { socketPath: inbox.CLAUDE_CODE_MESSAGING_SOCKET, token: inbox.CLAUDE_CODE_MESSAGING_TOKEN },
    });
  });

  it("issue 35 item 4: an inbox handed to another Claude or another session binds nothing, and the restart command stays", () => {
    const inbox = { CLAUDE_CODE_MESSAGING_SOCKET: "/tmp/cc-socks-0/201.sock", CLAUDE_CODE_MESSAGING_TOKEN: "ab12" };
    const otherPid = decideSessionStart(input, { ...linked, ...inbox, CLAUDE_PID: "201" }, tree(["claude"]));
    expect(otherPid.inbox).toBeUndefined();
    expect(otherPid.message).toContain("--resume");
    const otherSession = decideSessionStart(
      input,
      { ...linked, ...inbox, CLAUDE_PID: "200", CLAUDE_CODE_SESSION_ID: "00000000-0000-0000-0000-000000000000" },
      tree(["claude"]),
    );
    expect(otherSession.inbox).toBeUndefined();
    expect(otherSession.message).toContain("--resume");
  });
});
