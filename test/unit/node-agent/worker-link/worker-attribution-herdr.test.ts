/**
 * Rule 48 for a Herdr Codex hire (issue 12 item 5, ADR 0040 addendum): its worker server runs
 * under the app-server the agent started, outside the pane, so attribution goes by thread under
 * that host (hostedSeats: the seat whose recorded backend is that server, on its socket). It
 * credits the Herdr seat for its own thread; a server hosting only this seat can name no other
 * (another seat's thread is unknown_worker_thread), and a call naming no thread, from outside
 * the pane's tree, is refused (ambiguous_worker), never guessed.
 */
import { describe, expect, it } from "vitest";
import { SeatKind } from "../../../../shared/verdicts.js";
import type { SeatRecord } from "../../../../node-agent/harnesses/adapter.js";
import { attribute, hostedSeats, type CodexHost } from "../../../../node-agent/worker-link/worker-attribution.js";

const SOCK = "/s/agent/hires/h1/codex.sock";
const DAEMON = "/h/c/app-server-control/app-server-control.sock";
const seat = (name: string, endpoint: string, threadId: string, backend: [number, number]): SeatRecord => ({
  name,
  kind: SeatKind.Codex,
  title: name,
  occupantId: `occ-${name}`,
  createdAtMs: 0,
  pane: { host: "herdr", paneId: `w1:${name}`, terminalId: "t", sessionId: "s" },
  control: {
    codexHome: "/h/c",
    cwd: "/w",
    launch: "remote",
    endpoint,
    threadId,
    backendPid: backend[0],
    backendStartTime: backend[1],
    ownedByHire: "h1",
  },
});
const hired = seat("p1", `unix://${SOCK}`, "t-hired", [100, 1000]);
const other = seat("p2", `unix://${DAEMON}`, "t-other", [50, 500]);
const agentStarted: CodexHost = {
  process: { pid: 100, startTime: 1000, ppid: 7, pgid: 99, name: "codex" },
  socketPath: SOCK,
};

describe("rule 48: a Herdr Codex hire's worker calls under the agent-started app-server", () => {
  it("issue 12 item 5: the agent-started server hosts exactly the Herdr seat, and its thread credits that seat (the pane tree says nothing)", () => {
    expect(hostedSeats(agentStarted, [hired, other]).map((s) => s.name)).toEqual(["p1"]);
    expect(attribute({ host: agentStarted, thread: "t-hired", seats: [hired, other], paneMatches: [] })).toEqual({
      seat: hired,
    });
  });
  it("rule 48: a server hosting only this seat can name no other: another seat's thread is unknown_worker_thread; no thread is ambiguous_worker", () => {
    expect(attribute({ host: agentStarted, thread: "t-other", seats: [hired, other], paneMatches: [] })).toMatchObject({
      reason: "unknown_worker_thread",
    });
    expect(attribute({ host: agentStarted, thread: undefined, seats: [hired, other], paneMatches: [] })).toMatchObject({
      reason: "ambiguous_worker",
    });
  });
});
