/**
 * The guarded Esc's refusals and its one press, against an in-memory PaneKeyInput (our own
 * interface); the real press on a real Claude is in test/harnesses/claude.test.ts.
 */
import { describe, expect, it } from "vitest";
import { createGuardedEscStop, type PaneKeyInput } from "../../../../../node-agent/harnesses/claude/stop.js";
import { claudeInputLine } from "../../../../../node-agent/harnesses/claude/screen.js";
import type { SeatRecord } from "../../../../../node-agent/harnesses/adapter.js";
import type { PaneAgentStatus } from "../../../../../node-agent/panes/pane-host.js";

const seat: SeatRecord = {
  name: "c",
  kind: "claude",
  title: "",
  occupantId: "o",
  createdAtMs: 0,
  pane: { host: "herdr", paneId: "w1:p1", terminalId: "t1", sessionId: "s1" },
};

function keys(o: { status?: PaneAgentStatus[]; line?: string | undefined; terminalId?: string }) {
  const statuses = [...(o.status ?? ["working", "working", "idle"])];
  let presses = 0;
  const k: PaneKeyInput = {
    async paneState(paneId) {
      const agentStatus = statuses.length > 1 ? statuses.shift()! : statuses[0]!;
      return { paneId, terminalId: o.terminalId ?? "t1", sessionId: "s1", agentStatus };
    },
    async inputLine() {
      return "line" in o ? o.line : "";
    },
    async pressEscape() {
      presses++;
    },
  };
  return { k, presses: () => presses };
}
const stop = (k: PaneKeyInput, authority = true) =>
  createGuardedEscStop({ keys: k, recheckAuthority: async () => authority, idleWaitMs: 300, pollMs: 10 });

describe("claude-stop.createGuardedEscStop", () => {
  it("presses Esc exactly once and reports stopped when the pane is then seen idle", async () => {
    const f = keys({});
    expect((await stop(f.k)(seat)).result).toBe("stopped");
    expect(f.presses()).toBe(1);
  });

  it("a non-empty or unreadable input line is refused with no key", async () => {
    const draft = keys({ line: "owner's draft" });
    expect((await stop(draft.k)(seat)).result).toBe("unavailable");
    const unknown = keys({ line: undefined });
    expect((await stop(unknown.k)(seat)).result).toBe("unavailable");
    expect(draft.presses() + unknown.presses()).toBe(0);
  });

  it("a pane showing another terminal, or authority failing the recheck, is refused with no key", async () => {
    const moved = keys({ terminalId: "t2" });
    expect((await stop(moved.k)(seat)).result).toBe("unavailable");
    const f = keys({});
    expect((await stop(f.k, false)(seat)).result).toBe("unavailable");
    expect(moved.presses() + f.presses()).toBe(0);
  });

  it("not seen idle after the press is uncertain, and the key is never pressed again", async () => {
    const f = keys({ status: ["working"] });
    expect((await stop(f.k)(seat)).result).toBe("uncertain");
    expect(f.presses()).toBe(1);
  });

  it("an idle pane is already finished, with no key", async () => {
    const f = keys({ status: ["idle"] });
    expect((await stop(f.k)(seat)).result).toBe("already_finished");
    expect(f.presses()).toBe(0);
  });
});

describe("claude-screen.claudeInputLine", () => {
  const rule = "─".repeat(40);
  it("reads the prompt box between Claude's two rules, and nothing when the screen has no prompt box", () => {
    expect(claudeInputLine(`banner\n${rule}\n❯ \n${rule}\n  ? for shortcuts`)).toBe("");
    expect(claudeInputLine(`${rule}\n❯ half typed\n${rule}`)).toBe("half typed");
    expect(claudeInputLine("no prompt here")).toBeUndefined();
  });
});
