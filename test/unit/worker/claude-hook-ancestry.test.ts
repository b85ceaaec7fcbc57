/**
 * The Claude hooks find the Claude CLI among their ancestors through the ProofProvider,
 * past an intermediary shell: on Linux with real processes (a `claude` launcher that runs the
 * hook under `sh -c`), and on Windows on a recorded Win32_Process tree (claude.exe → cmd.exe
 * /c → node.exe, and the npm shim's node.exe …\claude-code\cli.js → powershell.exe). macOS is
 * covered on recorded ps output in test/unit/node-agent/proofs/darwin-facts.test.ts.
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LinuxProofProvider } from "../../../node-agent/proofs/linux.js";
import { WindowsProofProvider } from "../../../node-agent/proofs/windows.js";
import { systemMonotonicClock } from "../../../node-agent/proofs/proof.js";
import { ancestry, decideSessionStart, isClaude } from "../../../worker/claude-session-start-hook.js";
import { recordedWindows } from "../../kit/recorded-windows.js";
import { createClaudeDiscover } from "../../../node-agent/harnesses/claude/discover.js";

const SID = "17f0a106-f97a-4290-94e2-7f31f082a200";
const input = { hook_event_name: "SessionStart", session_id: SID, transcript_path: "/t.jsonl" };

describe("claude hook ancestry through the ProofProvider", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => cleanups.splice(0).forEach((c) => c()));

  it("Linux, real processes: Claude is found above `sh -c` running the hook", async () => {
    const dir = mkdtempSync(join(tmpdir(), "c15-claude-"));
    writeFileSync(join(dir, "claude"), "#!/bin/sh\nsh -c 'sleep 600; true'\n");
    chmodSync(join(dir, "claude"), 0o755);
    const child = spawn("/bin/sh", [join(dir, "claude"), "--resume", SID], { stdio: "ignore", detached: true });
    cleanups.push(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
      rmSync(dir, { recursive: true, force: true });
    });
    const linux = new LinuxProofProvider();
    let sleeper: number | undefined;
    for (let i = 0; i < 200 && sleeper === undefined; i++) {
      const g = await linux.groupMembers(child.pid!);
      sleeper = g.known ? g.value.find((m) => m.name === "sleep")?.pid : undefined;
      if (sleeper === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    const rows = await ancestry(linux, sleeper!);
    expect(rows!.slice(0, 3).map((r) => r.argv.slice(0, 2))).toEqual([
      ["sleep", "600"],
      ["sh", "-c"],
      ["/bin/sh", join(dir, "claude")],
    ]);
    const d = decideSessionStart(input, { TMUX_PANE: "%1" }, rows);
    expect(d.claudePid).toBe(child.pid);
    expect(d.message).toContain(`claude --resume ${SID}`);
  });

  it("Windows, recorded: claude.exe above cmd.exe /c, and node.exe running the npm package's cli.js above PowerShell", async () => {
    const win = new WindowsProofProvider(
      recordedWindows({ processes: "host-processes-hook.json" }),
      systemMonotonicClock,
      1,
    );
    const viaCmd = await ancestry(win, 7420);
    expect(decideSessionStart(input, { HERDR_PANE_ID: "w1:p1" }, viaCmd).claudePid).toBe(7400);
    const viaPwsh = await ancestry(win, 7510);
    expect(decideSessionStart(input, { HERDR_PANE_ID: "w1:p1" }, viaPwsh).claudePid).toBe(7500);
  });

  it("a pid the provider cannot show gives no ancestry, and the linked pane is told the channel cannot be confirmed", async () => {
    const win = new WindowsProofProvider(
      recordedWindows({ processes: "host-processes-hook.json" }),
      systemMonotonicClock,
      1,
    );
    const rows = await ancestry(win, 99999);
    expect(rows).toBeUndefined();
    expect(decideSessionStart(input, { HERDR_PANE_ID: "w1:p1" }, rows).message).toContain("cannot confirm");
  });

  it("isClaude: native binaries on every OS and the npm package under node, not look-alikes", () => {
    expect(isClaude(["C:\\Users\\x\\.local\\bin\\claude.exe"])).toBe(true);
    expect(isClaude(["node", "C:\\npm\\node_modules\\@anthropic-ai\\claude-code\\cli.js"])).toBe(true);
    expect(isClaude(["/usr/bin/claude-helper"])).toBe(false);
    expect(isClaude(["node", "/srv/not-claude-code/cli.js"])).toBe(false);
  });

  it("seat discovery recognises Claude by any OS's argv (a Windows claude.exe path), never in print mode", async () => {
    const dir = mkdtempSync(join(tmpdir(), "c15-claude-ch-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "claude-7400.sock"), "");
    const discover = createClaudeDiscover(dir, dir);
    const pane = { paneId: "w1:p1", terminalId: "t", sessionId: "s", title: "", cwd: "", agentStatus: "idle" as const };
    const info = (argv: string[]) => ({
      paneId: "w1:p1",
      shellPid: 7100,
      foregroundProcessGroupId: 0,
      tty: "",
      foregroundProcesses: [{ pid: 7400, name: "claude.exe", argv }],
    });
    expect(await discover(pane, info(["C:\\Users\\Jürgen Ö\\.local\\bin\\claude.exe", "--resume", SID]))).toMatchObject(
      { occupantId: expect.stringMatching(/^claude:7400:/) },
    );
    expect(await discover(pane, info(["C:\\Users\\x\\.local\\bin\\claude.exe", "-p", "hi"]))).toBeUndefined();
  });
});
