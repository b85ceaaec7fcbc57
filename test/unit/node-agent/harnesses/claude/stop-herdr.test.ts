/**
 * Claude's guarded stop through Herdr's key input, against the fake Herdr server that follows
 * Herdr's published socket schema (protocol 20; Herdr cannot be installed here): exactly one
 * `pane.send_keys {keys:["esc"]}` to exactly that pane while Herdr shows Claude working with an
 * empty input line (read with `pane.read`), and no key at all otherwise; every other typing
 * method stays refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HerdrPaneHost } from "../../../../../node-agent/panes/herdr.js";
import { herdrClaudeKeys } from "../../../../../node-agent/harnesses/claude/stop-herdr.js";
import { createGuardedEscStop } from "../../../../../node-agent/harnesses/claude/stop.js";
import { TYPING_METHODS } from "../../../../../node-agent/panes/herdr-client.js";
import type { SeatRecord } from "../../../../../node-agent/harnesses/adapter.js";
import { startFakeHerdr, type FakeHerdr } from "../../../../kit/fake-herdr.js";

const rule = "─".repeat(60);
const screen = (input: string, working: boolean) =>
  [
    "● working on it",
    working ? "✻ Thinking… (esc to interrupt)" : "",
    rule,
    `❯ ${input}`,
    rule,
    "  ? for shortcuts",
  ].join("\n");

describe("claude-stop-herdr.herdrClaudeKeys", () => {
  let herdr: FakeHerdr;
  let host: HerdrPaneHost;
  beforeAll(async () => {
    herdr = await startFakeHerdr();
    host = new HerdrPaneHost({ socketPath: herdr.socketPath });
  });
  afterAll(async () => {
    host?.close();
    await herdr?.close();
  });

  const seatIn = (paneId: string): SeatRecord => ({
    name: "claude-1",
    kind: "claude",
    title: "",
    occupantId: "o",
    createdAtMs: 0,
    pane: { host: "herdr", paneId, terminalId: `t-${paneId}`, sessionId: "default" },
  });
  const typed = () => herdr.calls.filter((c) => TYPING_METHODS.includes(c.method));
  const stop = () =>
    createGuardedEscStop({
      keys: herdrClaudeKeys(host),
      recheckAuthority: async () => true,
      idleWaitMs: 3000,
      pollMs: 20,
    });

  it("presses one esc in exactly that pane while Herdr shows Claude working with an empty input line, then reports stopped once idle", async () => {
    herdr.addPane({ pane_id: "w1:p1", terminal_id: "t-w1:p1", agent_status: "working" });
    herdr.setScreen("w1:p1", screen("", true));
    const before = typed().length;
    const pending = stop()(seatIn("w1:p1"));
    for (let i = 0; i < 200 && typed().length === before; i++) await new Promise((r) => setTimeout(r, 10));
    herdr.setAgentStatus("w1:p1", "idle");
    expect(await pending).toMatchObject({ result: "stopped" });
    expect(typed().slice(before)).toEqual([{ method: "pane.send_keys", params: { pane_id: "w1:p1", keys: ["esc"] } }]);
    expect(
      herdr.calls.some(
        (c) => c.method === "pane.read" && c.params.pane_id === "w1:p1" && c.params.source === "visible",
      ),
    ).toBe(true);
  });

  it("the owner's text on the input line, an idle Claude, or a replaced terminal: no key at all", async () => {
    herdr.addPane({ pane_id: "w1:p2", terminal_id: "t-w1:p2", agent_status: "working" });
    herdr.setScreen("w1:p2", screen("half-typed owner draft", true));
    herdr.addPane({ pane_id: "w1:p3", terminal_id: "t-w1:p3", agent_status: "idle" });
    herdr.setScreen("w1:p3", screen("", false));
    herdr.addPane({ pane_id: "w1:p4", terminal_id: "t-replaced", agent_status: "working" });
    herdr.setScreen("w1:p4", screen("", true));
    const before = typed().length;
    expect(await stop()(seatIn("w1:p2"))).toMatchObject({
      result: "unavailable",
      detail: expect.stringContaining("input line"),
    });
    expect(await stop()(seatIn("w1:p3"))).toMatchObject({ result: "already_finished" });
    expect(await stop()(seatIn("w1:p4"))).toMatchObject({
      result: "unavailable",
      detail: expect.stringContaining("different terminal"),
    });
    expect(typed().length).toBe(before);
  });

  it("every typing method stays refused on the generic call path: the esc is the only key, and it carries no text", async () => {
    for (const method of TYPING_METHODS)
      expect(await host.call(method, { pane_id: "w1:p1", text: "hello" })).toMatchObject({
        ok: false,
        kind: "forbidden",
      });
  });
});
