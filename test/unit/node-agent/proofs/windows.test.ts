/**
 * The Windows provider's parsers and calls on recorded PowerShell output
 * (test/fixtures/proofs/windows): Windows PowerShell 5.1 and PowerShell 7 date forms, the
 * bare object ConvertTo-Json writes for a single row, and malformed output. No Windows
 * machine is available here: the files follow the cmdlets' documented JSON shapes.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { connectionScript, listenersScript, parseCimProcesses, parseCreationDate, parseNetTcpConnections, PROCESSES_SCRIPT, WindowsProofProvider } from "../../../../node-agent/proofs/windows.js";
import type { CommandRunner } from "../../../../node-agent/proofs/run-command.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";

const fixture = (name: string) => readFileSync(new URL(`../../../fixtures/proofs/windows/${name}`, import.meta.url), "utf8");

function replay(files: { processes?: string; listen?: string; established?: string }): CommandRunner {
  return async (file, args) => {
    const script = args.at(-1) ?? "";
    const name = script === PROCESSES_SCRIPT ? (files.processes ?? "processes-ps51.json") : script.includes("-State Listen") ? (files.listen ?? "listen-one.json") : (files.established ?? "established.json");
    return file === "powershell.exe" ? { code: 0, stdout: fixture(name), stderr: "", isMissing: false } : { code: -1, stdout: "", stderr: "", isMissing: true };
  };
}

const provider = (files: Parameters<typeof replay>[0] = {}) => new WindowsProofProvider(systemMonotonicClock, replay(files));
const backend = { pid: 7300, startTime: Date.parse("2026-11-30T09:51:12.400Z") };

describe("windows parsers", () => {
  it("CreationDate in the 5.1 /Date(ms)/ form, the PowerShell 7 ISO form, and wrapped in a value object", () => {
    expect(parseCreationDate("/Date(1796031730500)/")).toBe(1796031730500);
    expect(parseCreationDate({ value: "/Date(1796031730500)/", DateTime: "Monday…" })).toBe(1796031730500);
    expect(parseCreationDate("2026-11-30T09:51:12.4004567+00:00")).toBeCloseTo(Date.parse("2026-11-30T09:51:12.400Z") + 0.4567, 6);
    expect(parseCreationDate("yesterday")).toBeUndefined();
  });
  it("Win32_Process rows from both PowerShell versions give the same table, System processes without dates left out", () => {
    const a = parseCimProcesses(fixture("processes-ps51.json"))!;
    const b = parseCimProcesses(fixture("processes-ps7.json"))!;
    expect(a.get(7300)).toEqual({ ...backend, ppid: 7100, pgid: -1, name: "codex.exe" });
    expect([...b.keys()]).toEqual([...a.keys()]);
    expect(a.has(0) || a.has(4)).toBe(false);
  });
  it("Get-NetTCPConnection as one bare object, as an array with numeric or named states, or empty", () => {
    expect(parseNetTcpConnections(fixture("listen-one.json"))).toEqual([{ localAddress: "127.0.0.1", localPort: 4500, remoteAddress: "0.0.0.0", remotePort: 0, state: "Listen", owningProcess: 7300 }]);
    expect(parseNetTcpConnections(fixture("listen-many.json"))!.map((r) => r.state)).toEqual(["Listen", "Listen"]);
    expect(parseNetTcpConnections(fixture("established.json"))!.map((r) => r.state)).toEqual(["Established", "Established"]);
    expect(parseNetTcpConnections("\r\n")).toEqual([]);
  });
  it("truncated JSON, the wrong shape, or an error text is refused, never read as no rows", () => {
    expect(parseNetTcpConnections(fixture("malformed-truncated.json"))).toBeUndefined();
    expect(parseNetTcpConnections(fixture("malformed-shape.json"))).toBeUndefined();
    expect(parseNetTcpConnections(fixture("malformed-error-text.txt"))).toBeUndefined();
    expect(parseCimProcesses(fixture("malformed-truncated.json"))).toBeUndefined();
  });
  it("scripts interpolate only integers", () => {
    expect(listenersScript(7300.9)).toContain("-OwningProcess 7300 ");
    expect(connectionScript(61234, 4500)).toContain("$_.LocalPort -eq 61234 -and $_.RemotePort -eq 4500");
  });
});

describe("windows.WindowsProofProvider on recorded output", () => {
  it("ancestry walks parents while each was created before its child", async () => {
    const a = await provider().ancestry(backend);
    expect(a.known && a.value.chain.map((e) => e.pid)).toEqual([7300, 7100, 7000, 612]);
    expect(a).toMatchObject({ known: true, value: { broken: true } });
    const orphan = await provider().ancestry({ pid: 8000, startTime: Date.parse("2026-11-30T09:30:00.000Z") });
    expect(orphan.known && orphan.value).toMatchObject({ broken: true, chain: [{ pid: 8000 }] });
  });
  it("a recorded creation time that differs is pid_gone (pid reuse)", async () => {
    expect(await provider().listeners({ pid: 7300, startTime: 1 })).toMatchObject({ known: false, reason: "pid_gone" });
  });
  it("listeners cover TCP only; a wildcard listener is marked not loopback", async () => {
    expect(await provider().listeners(backend)).toMatchObject({ known: true, value: { covers: ["tcp"], listeners: [{ address: "127.0.0.1", port: 4500, isLoopback: true }] } });
    const many = await provider({ listen: "listen-many.json" }).listeners(backend);
    expect(many.known && many.value.listeners.map((l) => l.transport === "tcp" && l.isLoopback)).toEqual([true, false]);
  });
  it("the other end of the agent's connection is the process owning the mirrored row", async () => {
    const peer = await provider().connectionPeer({ localAddress: "127.0.0.1", localPort: 61234, remoteAddress: "127.0.0.1", remotePort: 4500 });
    expect(peer).toMatchObject({ known: true, value: { peers: [backend], isComplete: true } });
  });
  it("foreground group and home are unsupported on Windows, with the reason; malformed output is unsupported", async () => {
    expect(await provider().foregroundGroup(backend)).toMatchObject({ known: false, reason: "unsupported" });
    expect(await provider().home(backend, "codex")).toMatchObject({ known: false, reason: "unsupported" });
    expect(await provider({ listen: "malformed-truncated.json" }).listeners(backend)).toMatchObject({ known: false, reason: "unsupported" });
    expect(await provider({ processes: "malformed-shape.json" }).identify(7300)).toMatchObject({ known: false, reason: "unsupported" });
  });
});
