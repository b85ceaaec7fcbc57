/**
 * The Windows provider's long-lived host transport (windows-host.ts) against a real
 * long-lived process: test/kit/fake-powershell-host.mjs stands in ONLY for the transport (no
 * PowerShell runs here) and answers from the recorded fixtures. Proves: one process serves
 * every request, answers are matched by id even out of order, a host that dies, hangs,
 * writes garbage or an oversized line is killed and every request it held answered `race`
 * (never guessed), the next request starts a new one, UTF-8 split across reads survives,
 * and a missing program is `unsupported`. Then the Windows provider's pane proof over it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  HOST_CSHARP,
  POWERSHELL_HOST_SCRIPT,
  powerShellHostArgs,
} from "../../../../node-agent/proofs/windows-host-script.js";
import { afterEach, describe, expect, it } from "vitest";
import { PowerShellHost } from "../../../../node-agent/proofs/windows-host.js";
import { WindowsProofProvider } from "../../../../node-agent/proofs/windows.js";
import { parseProcessDetail } from "../../../../node-agent/proofs/windows-parse.js";
import { provePane } from "../../../../node-agent/proofs/pane-proof.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";
import type { PaneHost } from "../../../../node-agent/panes/pane-host.js";
import { microsOf } from "../../../kit/recorded-windows.js";
import { available } from "../../../kit/requirements.js";

const SCRIPT = fileURLToPath(new URL("../../../kit/fake-powershell-host.mjs", import.meta.url));
const FIXTURES = fileURLToPath(new URL("../../../fixtures/proofs/windows", import.meta.url));

describe("windows-host.PowerShellHost against a real long-lived stand-in process", () => {
  const hosts: PowerShellHost[] = [];
  const host = (o: { timeoutMs?: number; maxLineBytes?: number } = {}) => {
    const h = new PowerShellHost({ file: process.execPath, args: [SCRIPT, FIXTURES], restartGapMs: 0, ...o });
    hosts.push(h);
    return h;
  };
  afterEach(() => hosts.splice(0).forEach((h) => h.close()));

  it("one process answers many concurrent requests, each matched to its own id even when a slow one answers last", async () => {
    const h = host();
    const asks = [
      h.ask({ op: "detail", pid: 6 }),
      ...Array.from({ length: 20 }, (_, i) => h.ask({ op: "detail", pid: i % 2 ? 7200 : 7300 })),
    ];
    const answers = await Promise.all(asks);
    expect(answers.every((a) => a.ok)).toBe(true);
    const pids = answers.map((a) => (a.ok ? (parseProcessDetail(a.data) as { pid: number }).pid : -1));
    expect(pids).toEqual([7300, ...Array.from({ length: 20 }, (_, i) => (i % 2 ? 7200 : 7300))]);
    expect(h.starts).toBe(1);
  });

  it("a host that exits mid-request: that request is race, the next one starts a new host", async () => {
    const h = host();
    expect((await h.ask({ op: "detail", pid: 7200 })).ok).toBe(true);
    expect(await h.ask({ op: "detail", pid: 1 })).toMatchObject({
      ok: false,
      reason: "race",
      detail: expect.stringContaining("exited"),
    });
    expect((await h.ask({ op: "detail", pid: 7300 })).ok).toBe(true);
    expect(h.starts).toBe(2);
  });

  it("a host that never answers is killed at the timeout; everything it held is race; then a new host answers", async () => {
    const h = host({ timeoutMs: 300 });
    const [stuck, behind] = await Promise.all([h.ask({ op: "detail", pid: 2 }), h.ask({ op: "detail", pid: 7200 })]);
    expect(stuck).toMatchObject({ ok: false, reason: "race", detail: expect.stringContaining("did not answer") });
    // The request behind it was answered before the timeout, so it keeps its answer.
    expect(behind.ok).toBe(true);
    expect((await h.ask({ op: "detail", pid: 7300 })).ok).toBe(true);
    expect(h.starts).toBe(2);
  });

  it("a line that is not JSON, or longer than the limit, kills the host rather than being read", async () => {
    const h = host({ maxLineBytes: 1024 * 1024 });
    expect(await h.ask({ op: "detail", pid: 3 })).toMatchObject({
      ok: false,
      reason: "race",
      detail: expect.stringContaining("not JSON"),
    });
    expect(await h.ask({ op: "detail", pid: 5 })).toMatchObject({
      ok: false,
      reason: "race",
      detail: expect.stringContaining("longer than the limit"),
    });
    expect(h.starts).toBe(2);
  });

  it("an answer arriving in chunks split inside a UTF-8 character is reassembled intact", async () => {
    const a = await host().ask({ op: "detail", pid: 4 });
    const d = a.ok ? parseProcessDetail(a.data) : undefined;
    expect(d?.ok && d.environment.get("CODEX_HOME")).toBe("C:\\Users\\Jürgen Ö\\.codex-seat");
  });

  it("a host program that does not exist is unsupported, with its name", async () => {
    const h = new PowerShellHost({ file: "/nonexistent/powershell.exe", args: [], restartGapMs: 0 });
    hosts.push(h);
    expect(await h.ask({ op: "processes" })).toMatchObject({
      ok: false,
      reason: "unsupported",
      detail: expect.stringContaining("powershell.exe"),
    });
  });

  it("the Windows provider's whole pane proof runs over the host, on the recorded tree: every proof proven", async () => {
    const h = host();
    const provider = new WindowsProofProvider(h.ask, systemMonotonicClock, 7777);
    const pane: PaneHost = {
      kind: "herdr",
      listPanes: async () => [
        { paneId: "w1:p1", terminalId: "t-9", sessionId: "main", title: "", cwd: "", agentStatus: "idle" },
      ],
      processInfo: async (paneId) => ({
        paneId,
        shellPid: 7100,
        foregroundProcessGroupId: 0,
        tty: "",
        foregroundProcesses: [
          { pid: 7300, name: "codex.exe", argv: [] },
          { pid: 7200, name: "codex.exe", argv: [] },
        ],
      }),
      subscribe: async () => () => {},
    };
    const proofs = await provePane(
      { host: pane, provider, clock: systemMonotonicClock },
      {
        pane: { paneId: "w1:p1", terminalId: "t-9", sessionId: "main" },
        tui: { pid: 7200, startTime: microsOf("2026-11-30T09:51:12.400456Z") },
        backend: { pid: 7300, startTime: microsOf("2026-11-30T09:51:12.100456Z") },
        order: "backend_first",
        harness: "codex",
        home: "C:\\Users\\Jürgen Ö\\.codex-seat",
        connection: { localAddress: "127.0.0.1", localPort: 61234, remoteAddress: "127.0.0.1", remotePort: 4500 },
      },
    );
    expect(proofs.filter((p) => p.outcome !== "proven")).toEqual([]);
    expect(h.starts).toBe(1);
  });
});

describe("windows-host-script: the program the real host runs", () => {
  it.skipIf(!available("mcs"))(
    "its C# (Toolhelp snapshot, GetExtendedTcpTable, the PEB reader) compiles (Mono's mcs; the calls need Windows)",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "c15-cs-"));
      try {
        writeFileSync(join(dir, "host.cs"), HOST_CSHARP);
        // C# 5: what Windows PowerShell 5.1's Add-Type compiles.
        const r = spawnSync(
          "mcs",
          ["-langversion:5", "-target:library", "-warnaserror+", `-out:${join(dir, "host.dll")}`, join(dir, "host.cs")],
          { encoding: "utf8" },
        );
        expect({ status: r.status, out: r.stdout + r.stderr }).toMatchObject({ status: 0 });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it.skipIf(!available("mcs"))("mcs is a real check here: a C# typo fails it", () => {
    const dir = mkdtempSync(join(tmpdir(), "c15-cs-"));
    try {
      writeFileSync(
        join(dir, "bad.cs"),
        HOST_CSHARP.replace(
          "public static List<Dictionary<string, object>> Processes()",
          "public static List<Dictionary<string, object> Processes()",
        ),
      );
      expect(
        spawnSync("mcs", ["-target:library", `-out:${join(dir, "bad.dll")}`, join(dir, "bad.cs")]).status,
      ).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("-EncodedCommand carries the whole script (UTF-16LE base64), the C# inside a here-string, answering every op", () => {
    const args = powerShellHostArgs();
    expect(args.slice(0, 5)).toEqual([
      "-NoProfile",
      "-NonInteractive",
      "-ExecutionPolicy",
      "Bypass",
      "-EncodedCommand",
    ]);
    expect(Buffer.from(args[5]!, "base64").toString("utf16le")).toBe(POWERSHELL_HOST_SCRIPT);
    expect(POWERSHELL_HOST_SCRIPT).toContain(`@'\n${HOST_CSHARP}\n'@`);
    for (const op of ["'processes'", "'tcp'", "'detail'"]) expect(POWERSHELL_HOST_SCRIPT).toContain(op);
    // A Windows command line holds at most 32 767 characters.
    expect(["powershell.exe", ...args].join(" ").length).toBeLessThan(32_767);
  });
});
