/**
 * The pane proof with the Windows provider on recorded host answers: Windows has no
 * foreground process group, so the pane host's foreground list and the creation-time
 * ancestry stand in; the private home is proven from both processes' PEB environments, and
 * an unreadable one keeps the gate shut (ADR 0207: no steering until the home is proven).
 * Neither Windows nor Herdr runs here: the pane host is the plain object Herdr's
 * pane.process_info answer would fill.
 */
import { describe, expect, it } from "vitest";
import { provePane, type PaneProofRequest } from "../../../../node-agent/proofs/pane-proof.js";
import { WindowsProofProvider } from "../../../../node-agent/proofs/windows.js";
import type { PaneHost } from "../../../../node-agent/panes/pane-host.js";
import { passGate } from "../../../../node-agent/proofs/freshness.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";
import { microsOf, recordedWindows, type RecordedWindows } from "../../../kit/recorded-windows.js";

const AGENT_PID = 7777;
const files: RecordedWindows = {
  listen: { 7300: "host-listen-backend.json" },
  detail: { 7200: "detail-tui-private.json", 7300: "detail-backend-private.json" },
};
const provider = (more: RecordedWindows = {}) =>
  new WindowsProofProvider(recordedWindows({ ...files, ...more }), systemMonotonicClock, AGENT_PID);

const host: PaneHost = {
  kind: "herdr",
  listPanes: async () => [
    {
      paneId: "w1:p1",
      terminalId: "t-9",
      sessionId: "main",
      title: "codex — seat",
      cwd: "C:\\work",
      agentStatus: "idle",
    },
  ],
  processInfo: async (paneId) => ({
    paneId,
    shellPid: 7100,
    foregroundProcessGroupId: 0,
    tty: "",
    foregroundProcesses: [
      { pid: 7300, name: "codex.exe", argv: ["codex", "app-server", "--listen", "ws://127.0.0.1:0"] },
      { pid: 7200, name: "codex.exe", argv: ["codex", "--remote", "ws://127.0.0.1:4500"] },
    ],
  }),
  subscribe: async () => () => {},
};

const request: PaneProofRequest = {
  pane: { paneId: "w1:p1", terminalId: "t-9", sessionId: "main" },
  tui: { pid: 7200, startTime: microsOf("2026-11-30T09:51:12.400456Z") },
  backend: { pid: 7300, startTime: microsOf("2026-11-30T09:51:12.100456Z") },
  order: "backend_first",
  harness: "codex",
  home: "C:\\Users\\Jürgen Ö\\.codex-seat",
  connection: { localAddress: "127.0.0.1", localPort: 61234, remoteAddress: "127.0.0.1", remotePort: 4500 },
};

const outcomes = async (p: WindowsProofProvider, req = request) =>
  Object.fromEntries(
    (await provePane({ host, provider: p, clock: systemMonotonicClock }, req)).map((x) => [x.kind, x.outcome]),
  );

describe("pane-proof.provePane on Windows", () => {
  it("proves pane, lifetimes, ancestry by creation time, order, the private home from both PEBs, listener and tuple", async () => {
    expect(await outcomes(provider())).toEqual({
      pane_identity: "proven",
      process_identity: "proven",
      foreground_ancestry: "proven",
      creation_order: "proven",
      private_home: "proven",
      backend_listener: "proven",
      connection_tuple: "proven",
    });
  });

  it("a backend whose PEB cannot be read keeps the gate shut: a definite proof_unknown, nothing written", async () => {
    const p = provider({ detail: { 7200: "detail-tui-private.json", 7300: "detail-access-denied.json" } });
    const r = await passGate({
      clock: systemMonotonicClock,
      wait: async () => {},
      readers: [{ name: "pane", read: () => provePane({ host, provider: p, clock: systemMonotonicClock }, request) }],
    });
    expect(r).toMatchObject({ pass: false, reason: "proof_unknown" });
  });

  it("a backend on the account's default home is not the pane's private home: refuted", async () => {
    expect(
      (await outcomes(provider({ detail: { 7200: "detail-tui-private.json", 7300: "detail-backend-default.json" } })))
        .private_home,
    ).toBe("refuted");
  });

  it("a TUI the pane host does not show in the foreground is refuted, whatever the title says", async () => {
    expect(
      (
        await outcomes(provider(), {
          ...request,
          tui: { pid: 7777, startTime: microsOf("2026-11-30T09:40:00.000001Z") },
        })
      ).foreground_ancestry,
    ).toBe("refuted");
  });
});
