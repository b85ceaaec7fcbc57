/**
 * The Windows provider's parsers and facts on recorded PowerShell output
 * (test/fixtures/proofs/windows), read through the same channel seam the long-lived host
 * serves: Windows PowerShell 5.1 and PowerShell 7 date forms, the bare object ConvertTo-Json
 * writes for one row, PID reuse, a process gone mid-read, access denied, non-ASCII paths,
 * CommandLineToArgvW splitting and malformed output. No Windows machine is available here.
 */
import { describe, expect, it } from "vitest";
import { WindowsProofProvider } from "../../../../node-agent/proofs/windows.js";
import {
  microsFromFileTime,
  parseCimProcesses,
  parseCreationDate,
  parseNetTcpConnections,
  parseProcessDetail,
  splitWindowsCommandLine,
} from "../../../../node-agent/proofs/windows-parse.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";
import { homeFromEnvironment } from "../../../../node-agent/proofs/provider.js";
import {
  microsOf,
  recordedWindows,
  windowsFixture as fixture,
  type RecordedWindows,
} from "../../../kit/recorded-windows.js";

const AGENT = 7777;
const full: RecordedWindows = {
  listen: { 7300: "host-listen-backend.json" },
  detail: { 7200: "detail-tui-private.json", 7300: "detail-backend-private.json", 666: "detail-access-denied.json" },
};
const provider = (files: RecordedWindows = full) =>
  new WindowsProofProvider(recordedWindows({ ...full, ...files }), systemMonotonicClock, AGENT);
const backend = { pid: 7300, startTime: microsOf("2026-11-30T09:51:12.100456Z") };
const tui = { pid: 7200, startTime: microsOf("2026-11-30T09:51:12.400456Z") };

describe("windows-parse", () => {
  it("start times are µs: 5.1's /Date(ms)/, 7's ISO with 7 digits, and a FILETIME all land on the same scale", () => {
    expect(parseCreationDate("/Date(1796031730500)/")).toBe(1796031730500 * 1000);
    expect(parseCreationDate({ value: "/Date(1796031730500)/", DateTime: "Monday…" })).toBe(1796031730500 * 1000);
    expect(parseCreationDate("2026-11-30T09:51:12.4004567+00:00")).toBe(microsOf("2026-11-30T09:51:12.400456Z"));
    // GetProcessTimes keeps 100 ns; CIM keeps µs: the extra digit is dropped so both compare equal.
    expect(microsFromFileTime("134090142724004567")).toBe(microsFromFileTime("134090142724004560"));
    expect(parseCreationDate("yesterday")).toBeUndefined();
    expect(microsFromFileTime("-5")).toBeUndefined();
  });
  it("Win32_Process rows from 5.1, 7 and the host give tables; System processes without dates are left out; a withheld command line is null", () => {
    const a = parseCimProcesses(fixture("processes-ps51.json"))!.rows;
    const b = parseCimProcesses(fixture("processes-ps7.json"))!.rows;
    expect([...b.keys()]).toEqual([...a.keys()]);
    const h = parseCimProcesses(fixture("host-processes.json"))!.rows;
    expect(h.get(7300)).toMatchObject({ ...backend, ppid: 7100, pgid: -1, name: "codex.exe" });
    expect(h.get(666)!.commandLine).toBeNull();
    expect(h.has(0) || h.has(4)).toBe(false);
  });
  it("command lines split as CommandLineToArgvW does: quotes, non-ASCII, backslashes before quotes", () => {
    expect(
      splitWindowsCommandLine('"C:\\Users\\Jürgen Ö\\codex.exe" --remote ws://127.0.0.1:4500 -C "C:\\work\\repo ä"'),
    ).toEqual(["C:\\Users\\Jürgen Ö\\codex.exe", "--remote", "ws://127.0.0.1:4500", "-C", "C:\\work\\repo ä"]);
    expect(splitWindowsCommandLine('a.exe "x\\\\" y')).toEqual(["a.exe", "x\\", "y"]);
    expect(splitWindowsCommandLine('a.exe \\"q\\" "in ""quote"""')).toEqual(["a.exe", '"q"', 'in "quote"']);
    expect(splitWindowsCommandLine("C:\\bin\\a.exe   C:\\dir\\  last")).toEqual([
      "C:\\bin\\a.exe",
      "C:\\dir\\",
      "last",
    ]);
  });
  it("Get-NetTCPConnection as one bare object, as an array with numeric or named states, or empty", () => {
    expect(parseNetTcpConnections(fixture("listen-one.json"))).toEqual([
      {
        localAddress: "127.0.0.1",
        localPort: 4500,
        remoteAddress: "0.0.0.0",
        remotePort: 0,
        state: "Listen",
        owningProcess: 7300,
      },
    ]);
    expect(parseNetTcpConnections(fixture("listen-many.json"))!.map((r) => r.state)).toEqual(["Listen", "Listen"]);
    expect(parseNetTcpConnections(fixture("established.json"))!.map((r) => r.state)).toEqual([
      "Established",
      "Established",
    ]);
    expect(parseNetTcpConnections("\r\n")).toEqual([]);
    expect(parseNetTcpConnections("null")).toEqual([]);
  });
  it("the PEB detail: variables case-folded, per-drive '=C:' entries dropped, a trailing backslash trimmed; errors typed; anything else refused", () => {
    const d = parseProcessDetail(fixture("detail-backend-private.json"))!;
    expect(d).toMatchObject({ ok: true, pid: 7300, startTime: backend.startTime, cwd: "C:\\work\\repo ä" });
    expect(d.ok && d.environment.get("CODEX_HOME")).toBe("C:\\Users\\Jürgen Ö\\.codex-seat");
    expect(d.ok && [...d.environment.keys()].some((k) => k.startsWith("="))).toBe(false);
    expect(parseProcessDetail(fixture("detail-access-denied.json"))).toMatchObject({
      ok: false,
      error: "access_denied",
    });
    expect(parseProcessDetail(fixture("detail-malformed.json"))).toBeUndefined();
    expect(parseProcessDetail('{"ProcessId":1,"Error":"bogus"}')).toBeUndefined();
  });
  it("truncated JSON, the wrong shape, or an error text is refused, never read as no rows", () => {
    expect(parseNetTcpConnections(fixture("malformed-truncated.json"))).toBeUndefined();
    expect(parseNetTcpConnections(fixture("malformed-shape.json"))).toBeUndefined();
    expect(parseNetTcpConnections(fixture("malformed-error-text.txt"))).toBeUndefined();
    expect(parseCimProcesses(fixture("malformed-truncated.json"))).toBeUndefined();
  });
});

describe("windows.WindowsProofProvider on recorded host answers", () => {
  it("ancestry walks parents while each was created before its child", async () => {
    const a = await provider().ancestry(tui);
    expect(a.known && a.value.chain.map((e) => e.pid)).toEqual([7200, 7100, 7000, 612]);
  });
  it("a reused pid is pid_gone for table facts and for the PEB read (its handle names another lifetime)", async () => {
    expect(await provider({ processes: "host-processes-pid-reused.json" }).listeners(backend)).toMatchObject({
      known: false,
      reason: "pid_gone",
    });
    expect(await provider({ detail: { 7300: "detail-reused.json" } }).home(backend, "codex")).toMatchObject({
      known: false,
      reason: "pid_gone",
    });
  });
  it("a process gone mid-read: its PEB read says gone, and a peer pid missing from the table leaves the answer incomplete", async () => {
    expect(await provider({ detail: { 7300: "detail-gone.json" } }).cwd(backend)).toMatchObject({
      known: false,
      reason: "pid_gone",
    });
    const peer = await provider({ processes: "host-processes-7300-gone.json" }).connectionPeer({
      localAddress: "127.0.0.1",
      localPort: 61234,
      remoteAddress: "127.0.0.1",
      remotePort: 4500,
    });
    expect(peer).toMatchObject({ known: true, value: { isAgentEnd: true, peers: [], isComplete: false } });
  });
  it("access denied is permission, for the PEB and for a withheld command line; a 32-bit process is unsupported", async () => {
    const svc = { pid: 666, startTime: microsOf("2026-11-30T09:42:11.000000Z") };
    expect(await provider().environment(svc)).toMatchObject({ known: false, reason: "permission" });
    expect(await provider().commandLine(svc)).toMatchObject({ known: false, reason: "permission" });
    expect(await provider({ detail: { 7300: "detail-wow64.json" } }).home(backend, "codex")).toMatchObject({
      known: false,
      reason: "unsupported",
    });
  });
  it("home, cwd and command line of a non-ASCII install: CODEX_HOME wins, else USERPROFILE\\.codex", async () => {
    expect(await provider().home(tui, "codex")).toMatchObject({
      known: true,
      value: { variable: "CODEX_HOME", path: "C:\\Users\\Jürgen Ö\\.codex-seat" },
    });
    expect(await provider({ detail: { 7200: "detail-tui-default.json" } }).home(tui, "codex")).toMatchObject({
      known: true,
      value: { variable: "USERPROFILE", path: "C:\\Users\\Jürgen Ö\\.codex" },
    });
    expect(await provider().cwd(tui)).toMatchObject({ known: true, value: "C:\\work\\repo ä" });
    // Git Bash sets HOME (often in MSYS form); Codex on Windows uses the profile folder.
    expect(
      homeFromEnvironment(
        new Map([
          ["HOME", "/c/Users/x"],
          ["USERPROFILE", "C:\\Users\\x"],
        ]),
        "codex",
        "win32",
      ),
    ).toEqual({ variable: "USERPROFILE", path: "C:\\Users\\x\\.codex" });
    expect(await provider().commandLine(tui)).toMatchObject({
      known: true,
      value: {
        isExact: true,
        argv: [
          "C:\\Users\\Jürgen Ö\\AppData\\Roaming\\npm\\node_modules\\@openai\\codex\\vendor\\codex.exe",
          "--remote",
          "ws://127.0.0.1:4500",
          "-C",
          "C:\\work\\repo ä",
        ],
      },
    });
  });
  it("listeners cover TCP only; the other end of the agent's connection is the process owning the mirrored row", async () => {
    expect(await provider().listeners(backend)).toMatchObject({
      known: true,
      value: { covers: ["tcp"], listeners: [{ address: "127.0.0.1", port: 4500, isLoopback: true }] },
    });
    const peer = await provider().connectionPeer({
      localAddress: "127.0.0.1",
      localPort: 61234,
      remoteAddress: "127.0.0.1",
      remotePort: 4500,
    });
    expect(peer).toMatchObject({ known: true, value: { isAgentEnd: true, peers: [backend], isComplete: true } });
  });
  it("the host's native snapshot: a process Windows will not open is permission, not gone; its command line comes from the PEB", async () => {
    const t = parseCimProcesses(fixture("host-native-processes.json"))!;
    expect(t.hidden).toEqual(new Set([666]));
    expect(t.rows.get(7200)!.commandLine).toBeUndefined();
    const p = provider({ processes: "host-native-processes.json", detail: { 7200: "detail-tui-native.json" } });
    expect(await p.identify(666)).toMatchObject({ known: false, reason: "permission" });
    expect(await p.identify(9999)).toMatchObject({ known: false, reason: "pid_gone" });
    expect(await p.commandLine(tui)).toMatchObject({
      known: true,
      value: {
        isExact: true,
        argv: [expect.stringMatching(/codex\.exe$/), "--remote", "ws://127.0.0.1:4500", "-C", "C:\\work\\repo ä"],
      },
    });
    expect(await p.ancestry(tui)).toMatchObject({
      known: true,
      value: { chain: [{ pid: 7200 }, { pid: 7100 }, { pid: 7000 }, { pid: 612 }] },
    });
  });
  it("concurrent table readers share one host request; a later reader asks again", async () => {
    const channel = recordedWindows(full);
    const p = new WindowsProofProvider(channel, systemMonotonicClock, AGENT);
    await Promise.all([p.identify(7200), p.identify(7300), p.ancestry(tui)]);
    expect(channel.asked.filter((q) => q.op === "processes")).toHaveLength(1);
    await p.identify(7200);
    expect(channel.asked.filter((q) => q.op === "processes")).toHaveLength(2);
  });
  it("no groups on Windows, and a host failure is passed on with its reason, never as an empty answer", async () => {
    expect(await provider().foregroundGroup(backend)).toMatchObject({ known: false, reason: "unsupported" });
    expect(await provider().groupMembers(7100)).toMatchObject({ known: false, reason: "unsupported" });
    const broken = new WindowsProofProvider(
      async () => ({ ok: false, reason: "race", detail: "the PowerShell host exited (1) before answering" }),
      systemMonotonicClock,
      AGENT,
    );
    expect(await broken.listeners(backend)).toMatchObject({
      known: false,
      reason: "race",
      detail: expect.stringContaining("exited"),
    });
    expect(await provider({ processes: "malformed-shape.json" }).identify(7300)).toMatchObject({
      known: false,
      reason: "unsupported",
    });
  });
});
