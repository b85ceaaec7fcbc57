/**
 * The pane proof with the Windows provider on recorded PowerShell output: Windows has no
 * foreground process group, so the pane host's foreground list and the creation-time
 * ancestry stand in; its process environment is not readable, so the private home stays
 * unknown and the gate refuses (ADR 0207: no steering until the home is proven). Neither a
 * Windows machine nor Herdr runs here, so the pane host is the plain object Herdr's
 * pane.process_info answer would fill.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { provePane, type PaneProofRequest } from "../../../../node-agent/proofs/pane-proof.js";
import { WindowsProofProvider, PROCESSES_SCRIPT } from "../../../../node-agent/proofs/windows.js";
import type { PaneHost } from "../../../../node-agent/panes/pane-host.js";
import { passGate } from "../../../../node-agent/proofs/freshness.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";

const fixture = (name: string) => readFileSync(new URL(`../../../fixtures/proofs/windows/${name}`, import.meta.url), "utf8");
const AGENT_PID = 7777;
const provider = new WindowsProofProvider(
  systemMonotonicClock,
  async (_file, args) => {
    const script = args.at(-1) ?? "";
    const name = script === PROCESSES_SCRIPT ? "processes-ps51.json" : script.includes("-State Listen") ? "listen-one.json" : "established.json";
    return { code: 0, stdout: fixture(name), stderr: "", isMissing: false };
  },
  AGENT_PID,
);
const at = (iso: string) => Date.parse(iso);

const host: PaneHost = {
  kind: "herdr",
  listPanes: async () => [{ paneId: "w1:p1", terminalId: "t-9", sessionId: "main", title: "codex — seat", cwd: "C:\\work", agentStatus: "idle" }],
  processInfo: async (paneId) => ({
    paneId,
    shellPid: 7100,
    foregroundProcessGroupId: 0,
    tty: "",
    foregroundProcesses: [
      { pid: 7200, name: "codex.exe", argv: ["codex", "--remote", "ws://127.0.0.1:4500"] },
      { pid: 7300, name: "codex.exe", argv: ["codex", "app-server"] },
    ],
  }),
  subscribe: async () => () => {},
};

const request: PaneProofRequest = {
  pane: { paneId: "w1:p1", terminalId: "t-9", sessionId: "main" },
  tui: { pid: 7200, startTime: at("2026-11-30T09:51:12.100Z") },
  backend: { pid: 7300, startTime: at("2026-11-30T09:51:12.400Z") },
  order: "tui_first",
  harness: "codex",
  home: "C:\\Users\\worker\\.codex-seat",
  connection: { localAddress: "127.0.0.1", localPort: 61234, remoteAddress: "127.0.0.1", remotePort: 4500 },
};

describe("pane-proof.provePane on Windows", () => {
  it("proves pane, lifetimes, ancestry by creation time, order, listener and tuple; the home stays unknown", async () => {
    const proofs = await provePane({ host, provider, clock: systemMonotonicClock }, request);
    expect(Object.fromEntries(proofs.map((p) => [p.kind, p.outcome]))).toEqual({
      pane_identity: "proven",
      process_identity: "proven",
      foreground_ancestry: "proven",
      creation_order: "proven",
      private_home: "unknown",
      backend_listener: "proven",
      connection_tuple: "proven",
    });
    expect(proofs.find((p) => p.kind === "foreground_ancestry")!.detail).toContain("pane host's foreground list");
  });

  it("an unproven home keeps the gate shut: a definite proof_unknown, nothing written", async () => {
    const r = await passGate({ clock: systemMonotonicClock, wait: async () => {}, readers: [{ name: "pane", read: () => provePane({ host, provider, clock: systemMonotonicClock }, request) }] });
    expect(r).toMatchObject({ pass: false, reason: "proof_unknown" });
    expect(r.detail).toContain("private_home: unsupported");
  });

  it("a TUI the pane host does not show in the foreground is refuted, whatever the title says", async () => {
    const proofs = await provePane({ host, provider, clock: systemMonotonicClock }, { ...request, tui: { pid: 7777, startTime: at("2026-11-30T09:45:00.000Z") } });
    expect(proofs.find((p) => p.kind === "foreground_ancestry")!.outcome).toBe("refuted");
  });
});
