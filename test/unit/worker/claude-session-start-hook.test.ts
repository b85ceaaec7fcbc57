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
});
