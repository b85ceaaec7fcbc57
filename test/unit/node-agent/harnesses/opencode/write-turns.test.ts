/**
 * Rule 39 for OpenCode (issue 35 item 2): native idle releases dispatch only after the exact
 * active turn is observed terminal. OpenCode names no turns; it gives its own message ids (time
 * ordered) and each assistant message's `time.completed`, `finish` and `error`. A write that left
 * while a turn ran records the newest message then; that turn is terminal only once the newest
 * assistant message at or after it completed with a final finish (a "tool-calls" step is followed
 * by another) or an error. Each case feeds the unattended release's decision
 * (controller/delivery/idle-release.ts); before this fix OpenCode reported no write turn, and
 * idle alone released.
 */
import { describe, expect, it } from "vitest";
import { OpenCodeWriteTurns } from "../../../../../node-agent/harnesses/opencode/write-turns.js";
import type { OpenCodeCall } from "../../../../../node-agent/harnesses/opencode/probe.js";
import type { OpenCodeControl } from "../../../../../node-agent/harnesses/opencode/control.js";
import { idleReleases } from "../../../../../controller/delivery/idle-release.js";

const ID = "7335fe0e-a46e-4d52-994d-71de1cac2a35";
const control = { sessionId: "ses_1", baseUrl: "http://127.0.0.1:1" } as OpenCodeControl;
type Msg = { info: { id: string; role: string; finish?: string; error?: unknown; time?: { completed?: number } } };

/** A session whose message list the test changes between calls. */
function session(messages: Msg[]): OpenCodeCall {
  return async (_method, path) =>
    path.startsWith("/session/ses_1/message")
      ? { kind: "answered", status: 200, body: JSON.stringify(messages) }
      : { kind: "answered", status: 404, body: "" };
}

const releases = (writeTurn: Awaited<ReturnType<OpenCodeWriteTurns["observe"]>>) =>
  idleReleases({ kind: "absent", status: "idle", writeTurn });

describe("OpenCodeWriteTurns (rule 39)", () => {
  it("rule 39: the turn running at the write keeps the fence through a tool-calls step, until a final finish", async () => {
    const messages: Msg[] = [{ info: { id: "msg_01", role: "user" } }, { info: { id: "msg_02", role: "assistant" } }];
    const call = session(messages);
    const turns = new OpenCodeWriteTurns();
    await turns.record(call, control, ID, true, "");
    expect(releases(await turns.observe(call, control, ID, ""))).toBe(false);
    messages[1]!.info = { id: "msg_02", role: "assistant", finish: "tool-calls", time: { completed: 1 } };
    messages.push({ info: { id: "msg_03", role: "assistant" } });
    expect(await turns.observe(call, control, ID, "")).toBe("active");
    messages[2]!.info = { id: "msg_03", role: "assistant", finish: "stop", time: { completed: 2 } };
    expect(await turns.observe(call, control, ID, "")).toBe("terminal");
    expect(releases(await turns.observe(call, control, ID, ""))).toBe(true);
  });

  it("rule 39: a turn OpenCode ended with an error (its model not found, the server gone) is terminal", async () => {
    const messages: Msg[] = [{ info: { id: "msg_01", role: "assistant" } }];
    const call = session(messages);
    const turns = new OpenCodeWriteTurns();
    await turns.record(call, control, ID, true, "");
    messages[0]!.info = { id: "msg_01", role: "assistant", error: { name: "APIError" } };
    expect(await turns.observe(call, control, ID, "")).toBe("terminal");
  });

  it("rule 39: no record (an agent restart) or a session that cannot be read is unknown and never releases", async () => {
    const turns = new OpenCodeWriteTurns();
    expect(releases(await turns.observe(session([]), control, ID, ""))).toBe(false);
    const broken: OpenCodeCall = async () => ({ kind: "lost", detail: "reset" });
    await turns.record(broken, control, ID, true, "");
    expect(await turns.observe(session([]), control, ID, "")).toBe("unknown");
  });

  it("no turn ran at the write: nothing holds the message back, and idle releases", async () => {
    const turns = new OpenCodeWriteTurns();
    await turns.record(session([]), control, ID, false, "");
    expect(releases(await turns.observe(session([]), control, ID, ""))).toBe(true);
  });
});
