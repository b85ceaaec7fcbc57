/**
 * The macOS provider's process facts behind discovery, the tmux pane host and the Claude
 * hooks, on recorded `ps`/`lsof -F` output through the command-runner seam (no Mac runs
 * here; the files follow ps(1) and lsof(8)'s documented formats): command lines, cwd with a
 * non-ASCII path as lsof escapes it in the C locale, a process group's live members, the
 * Codex TUI found with its own home, and Claude recognised through an intermediary shell.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DarwinProofProvider, decodeLsofName } from "../../../../node-agent/proofs/darwin.js";
import type { CommandResult, CommandRunner } from "../../../../node-agent/proofs/run-command.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";
import { foregroundGroupOf, groupProcesses } from "../../../../node-agent/panes/foreground.js";
import { findCodexTui } from "../../../../node-agent/harnesses/codex/process.js";
import { ancestry, decideSessionStart } from "../../../../worker/claude-session-start-hook.js";

const fixture = (name: string) =>
  readFileSync(new URL(`../../../fixtures/proofs/darwin/${name}`, import.meta.url), "utf8");
const ok = (stdout: string): CommandResult => ({ code: 0, stdout, stderr: "", isMissing: false });

const ARGS: Record<number, string> = {
  700: "-zsh",
  900: "node /opt/homebrew/bin/claude --resume 17f0a106-f97a-4290-94e2-7f31f082a200",
  950: "/bin/sh -c clankie worker session-start-hook --report-dir /Users/worker/.clankie/claude",
  960: "node /opt/homebrew/bin/clankie worker session-start-hook --report-dir /Users/worker/.clankie/claude",
  4242: "/opt/homebrew/bin/codex --remote ws://127.0.0.1:4500",
};

/** lstart of each pid in ps-axo-hook.txt, as `ps -o lstart=` prints it. */
const START: Record<number, string> = Object.fromEntries(
  fixture("ps-axo-hook.txt")
    .trim()
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .map((t) => [Number(t[0]), t.slice(7, 12).join(" ")]),
);

function replay(): CommandRunner & { calls: string[][] } {
  const calls: string[][] = [];
  const run = async (file: string, args: readonly string[]): Promise<CommandResult> => {
    calls.push([file, ...args]);
    const pid = Number(args[args.indexOf("-p") + 1]);
    if (file === "ps" && args[0] === "-E")
      return ok(`${START[pid]} ${fixture("ps-E.txt").split(" ").slice(5).join(" ")}`);
    if (file === "ps" && args.includes("lstart=,args="))
      return ARGS[pid] ? ok(`${START[pid]} ${ARGS[pid]}\n`) : { code: 1, stdout: "", stderr: "", isMissing: false };
    if (file === "ps") return ok(fixture("ps-axo-hook.txt"));
    if (file === "lsof" && args.includes("cwd")) return ok(fixture("lsof-cwd-nonascii.txt"));
    return { code: -1, stdout: "", stderr: "", isMissing: true };
  };
  return Object.assign(run, { calls });
}

const at = (h: number, m: number, s: number) => Date.UTC(2026, 10, 30, h, m, s) / 1000;

describe("darwin process facts on recorded output", () => {
  it("lsof's \\xNN escapes of a UTF-8 path are decoded; bytes that are not UTF-8 stay as printed", async () => {
    expect(decodeLsofName("/Users/w/caf\\xc3\\xa9 repo")).toBe("/Users/w/café repo");
    expect(decodeLsofName("/bad\\xff")).toBe("/bad\\xff");
    const p = new DarwinProofProvider(systemMonotonicClock, replay(), 501);
    expect(await p.cwd({ pid: 4242, startTime: at(9, 53, 12) })).toMatchObject({
      known: true,
      value: "/Users/worker/Projekte/café repo",
    });
  });

  it("another user's cwd is permission, never an lsof answer read as empty", async () => {
    const p = new DarwinProofProvider(systemMonotonicClock, replay(), 502);
    expect(await p.cwd({ pid: 4242, startTime: at(9, 53, 12) })).toMatchObject({ known: false, reason: "permission" });
  });

  it("a command line from ps is split at spaces and flagged inexact; a reused pid or one gone mid-read is pid_gone", async () => {
    const p = new DarwinProofProvider(systemMonotonicClock, replay(), 501);
    expect(await p.commandLine({ pid: 4242, startTime: at(9, 53, 12) })).toMatchObject({
      known: true,
      value: { isExact: false, argv: ["/opt/homebrew/bin/codex", "--remote", "ws://127.0.0.1:4500"] },
    });
    expect(await p.commandLine({ pid: 4242, startTime: at(9, 0, 0) })).toMatchObject({
      known: false,
      reason: "pid_gone",
    });
    // Gone between the table read and this one: ps -p answers nothing, exit 1, no complaint.
    expect(await p.commandLine({ pid: 612, startTime: at(9, 42, 10) })).toMatchObject({
      known: false,
      reason: "pid_gone",
    });
  });

  it("tmux on macOS: the shell's foreground group and its live members (a zombie is left out)", async () => {
    const p = new DarwinProofProvider(systemMonotonicClock, replay(), 501);
    expect(await foregroundGroupOf(p, 700)).toBe(900);
    const members = await groupProcesses(p, 900);
    expect(members.map((m) => m.pid)).toEqual([900, 950, 960]);
    expect(members[0]!.argv.slice(0, 2)).toEqual(["node", "/opt/homebrew/bin/claude"]);
  });

  it("concurrent readers of the process table share one ps; a reader after the reuse window forks again", async () => {
    const run = replay();
    let now = 1_000;
    const p = new DarwinProofProvider({ nowMs: () => now }, run, 501);
    await Promise.all([p.identify(900), p.identify(950), p.ancestry({ pid: 960, startTime: at(9, 52, 0) })]);
    expect(run.calls.filter((c) => c[0] === "ps" && c[1] === "-axww")).toHaveLength(1);
    now += 126;
    await p.identify(900);
    expect(run.calls.filter((c) => c[0] === "ps" && c[1] === "-axww")).toHaveLength(2);
  });

  it("Codex discovery on macOS takes the home from the process's own environment and its cwd from lsof", async () => {
    const p = new DarwinProofProvider(systemMonotonicClock, replay(), 501);
    const tui = await findCodexTui([{ pid: 4242, name: "codex", argv: ARGS[4242]!.split(" ") }], p);
    expect(tui).toMatchObject({
      pid: 4242,
      startTime: at(9, 53, 12),
      codexHome: "/Users/worker/.codex-seat",
      homeVariable: "CODEX_HOME",
      cwd: "/Users/worker/Projekte/café repo",
      launch: "remote",
      endpoint: "ws://127.0.0.1:4500",
    });
  });

  it("the SessionStart hook finds Claude (node running the npm bin) above the intermediary sh -c and the clankie wrapper", async () => {
    const p = new DarwinProofProvider(systemMonotonicClock, replay(), 501);
    const rows = await ancestry(p, 960);
    expect(rows!.map((r) => r.pid)).toEqual([960, 950, 900, 700, 612, 1].slice(0, rows!.length));
    const d = decideSessionStart(
      {
        hook_event_name: "SessionStart",
        session_id: "17f0a106-f97a-4290-94e2-7f31f082a200",
        transcript_path: "/t.jsonl",
      },
      { TMUX_PANE: "%3" },
      rows,
    );
    expect(d.claudePid).toBe(900);
    expect(d.message).toContain(
      "claude --resume 17f0a106-f97a-4290-94e2-7f31f082a200 --dangerously-load-development-channels",
    );
  });
});
