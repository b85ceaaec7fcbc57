/**
 * The macOS provider's parsers and calls on recorded output (test/fixtures/proofs/darwin).
 * `*-recorded.txt` lsof output was recorded on this Linux machine: lsof's -F format is the
 * same program's on macOS. `*-macos.txt` and the ps files follow macOS's documented output
 * (no Mac is available here); malformed ones are truncated or not -F output at all.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  DarwinProofProvider,
  listenersFromLsof,
  parseLsof,
  parsePsEnvironment,
  parsePsTable,
} from "../../../../node-agent/proofs/darwin.js";
import type { CommandResult, CommandRunner } from "../../../../node-agent/proofs/run-command.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";

const fixture = (name: string) =>
  readFileSync(new URL(`../../../fixtures/proofs/darwin/${name}`, import.meta.url), "utf8");
const ok = (stdout: string): CommandResult => ({ code: 0, stdout, stderr: "", isMissing: false });

/** Replays recorded output by command: ps table, ps -E, the lsof socket table. */
function replay(files: { ps?: string; psE?: string; sockets?: string }): CommandRunner {
  return async (file, args) => {
    if (file === "ps" && args[0] === "-E") return ok(fixture(files.psE ?? "ps-E.txt"));
    if (file === "ps") return ok(fixture(files.ps ?? "ps-axo.txt"));
    if (file === "lsof" && args.includes("-U")) return ok(fixture(files.sockets ?? "lsof-sockets-macos.txt"));
    return { code: -1, stdout: "", stderr: "", isMissing: true };
  };
}

const provider = (files: Parameters<typeof replay>[0] = {}, uid = 501) =>
  new DarwinProofProvider(systemMonotonicClock, replay(files), uid);
const codexTui = { pid: 4242, startTime: Date.UTC(2026, 10, 30, 9, 51, 12) / 1000 };

describe("darwin parsers", () => {
  it("ps rows give identity (pid + lstart seconds), groups and terminal; names with spaces survive", () => {
    const t = parsePsTable(fixture("ps-axo.txt"))!;
    expect(t.get(4242)).toMatchObject({
      ...codexTui,
      ppid: 900,
      pgid: 900,
      tpgid: 900,
      uid: 501,
      tty: "ttys003",
      name: "codex",
    });
    expect(t.get(5000)!.name).toBe("Google Chrome");
  });
  it("a truncated ps table is refused whole, so no pid reads as gone by mistake", () => {
    expect(parsePsTable(fixture("ps-axo-malformed.txt"))).toBeUndefined();
    expect(parsePsTable("")).toBeUndefined();
  });
  it("ps -E: the environment follows argv, so the later KEY= wins", () => {
    const env = parsePsEnvironment(fixture("ps-E.txt").trim());
    expect(env.get("CODEX_HOME")).toBe("/Users/worker/.codex-seat");
    expect(env.get("HOME")).toBe("/Users/worker");
    expect(parsePsEnvironment(fixture("ps-E-hidden.txt").trim()).size).toBe(0);
  });
  it("lsof -F: loopback and wildcard TCP listeners and bound unix sockets (macOS and recorded output)", () => {
    expect(listenersFromLsof(parseLsof(fixture("lsof-pid-macos.txt"))!)).toEqual([
      { transport: "tcp", address: "::1", port: 4500, isLoopback: true },
      { transport: "tcp", address: "0.0.0.0", port: 8080, isLoopback: false },
      { transport: "unix", path: "/Users/worker/.codex-seat/app-server.sock" },
    ]);
    expect(listenersFromLsof(parseLsof(fixture("lsof-pid-recorded.txt"))!)).toEqual([
      { transport: "tcp", address: "127.0.0.1", port: 37623, isLoopback: true },
      { transport: "unix", path: "/tmp/seat/x.sock" },
    ]);
  });
  it("output that is not lsof -F (a plain table, a name before any file) is refused", () => {
    expect(parseLsof(fixture("lsof-malformed-table.txt"))).toBeUndefined();
    expect(parseLsof(fixture("lsof-malformed-name-before-file.txt"))).toBeUndefined();
  });
});

describe("darwin.DarwinProofProvider on recorded output", () => {
  it("identity, ancestry to launchd, and the terminal's foreground group", async () => {
    const p = provider();
    expect(await p.identify(4242)).toMatchObject({ known: true, value: { ...codexTui, ppid: 900, pgid: 900 } });
    const a = await p.ancestry(codexTui);
    expect(a.known && a.value.chain.map((e) => e.pid)).toEqual([4242, 900, 700, 612, 1]);
    const fg = await p.foregroundGroup({ pid: 700, startTime: Date.UTC(2026, 10, 30, 9, 50, 1) / 1000 });
    expect(fg).toMatchObject({ known: true, value: { tty: "/dev/ttys003", foregroundPgid: 900 } });
  });
  it("a parent that started after its child is a reused pid: the chain is broken there", async () => {
    const a = await provider().ancestry({ pid: 5000, startTime: Date.UTC(2026, 10, 30, 9, 30, 0) / 1000 });
    expect(a).toMatchObject({ known: true, value: { broken: true } });
    expect(a.known && a.value.chain).toHaveLength(1);
  });
  it("a recorded identity with another start time is pid_gone; a malformed table is unsupported, not an exception", async () => {
    expect(await provider().home({ pid: 4242, startTime: 1 }, "codex")).toMatchObject({
      known: false,
      reason: "pid_gone",
    });
    expect(await provider({ ps: "ps-axo-malformed.txt" }).identify(4242)).toMatchObject({
      known: false,
      reason: "unsupported",
    });
  });
  it("home from ps -E; an environment hidden from this user is permission", async () => {
    expect(await provider().home(codexTui, "codex")).toMatchObject({
      known: true,
      value: { variable: "CODEX_HOME", path: "/Users/worker/.codex-seat" },
    });
    expect(await provider({ psE: "ps-E-hidden.txt" }).home(codexTui, "codex")).toMatchObject({
      known: false,
      reason: "permission",
    });
  });
  it("listeners of another user's process are permission for a non-root agent, never an empty list", async () => {
    expect(await provider({}, 502).listeners(codexTui)).toMatchObject({ known: false, reason: "permission" });
    expect(await provider({}, 501).listeners(codexTui)).toMatchObject({ known: true });
    expect(await provider({ sockets: "lsof-malformed-table.txt" }).listeners(codexTui)).toMatchObject({
      known: false,
      reason: "unsupported",
    });
  });
  it("the other end of a connection is the process holding the mirrored tuple", async () => {
    const peer = await provider({}, 0).connectionPeer({
      localAddress: "127.0.0.1",
      localPort: 61234,
      remoteAddress: "127.0.0.1",
      remotePort: 4500,
    });
    expect(peer).toMatchObject({
      known: true,
      value: { peers: [{ pid: 4242, startTime: codexTui.startTime }], isComplete: true },
    });
  });
  it("a missing command is unsupported", async () => {
    const none = new DarwinProofProvider(
      systemMonotonicClock,
      async () => ({ code: -1, stdout: "", stderr: "", isMissing: true }),
      0,
    );
    expect(await none.identify(1)).toMatchObject({ known: false, reason: "unsupported" });
  });
});
