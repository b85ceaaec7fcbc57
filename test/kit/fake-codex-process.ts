/**
 * A real process that looks like a Codex TUI to the kernel (read through the Linux proof provider): a shell script named `codex`, run
 * with the given flags and its own CODEX_HOME in its environment, that just sleeps. For
 * unit tests of recognition and capabilities without the 400 MB binary (the real binary is
 * exercised in test/harnesses/).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PaneProcessInfo } from "../../node-agent/panes/pane-host.js";
import { groupProcesses } from "../../node-agent/panes/foreground.js";
import { LinuxProofProvider } from "../../node-agent/proofs/linux.js";

const provider = new LinuxProofProvider();
const processGroupMembers = (pgid: number) => groupProcesses(provider, pgid);

export interface FakeCodexProcess {
  child: ChildProcess;
  pid: number;
  codexHome: string;
  cwd: string;
  /** The pane's view of it: its process group as the foreground group. */
  processInfo(paneId: string): Promise<PaneProcessInfo>;
  kill(): Promise<void>;
}

export async function spawnFakeCodex(flags: string[], codexHome?: string): Promise<FakeCodexProcess> {
  const root = mkdtempSync(join(tmpdir(), "fake-codex-"));
  const bin = join(root, "bin");
  const cwd = join(root, "work");
  const home = codexHome ?? join(root, "codex-home");
  mkdirSync(bin);
  mkdirSync(cwd);
  mkdirSync(home, { recursive: true });
  writeFileSync(join(bin, "codex"), "#!/bin/sh\nsleep 600\n");
  chmodSync(join(bin, "codex"), 0o755);
  const child = spawn("/bin/sh", [join(bin, "codex"), ...flags], {
    cwd,
    env: { PATH: process.env.PATH, CODEX_HOME: home },
    stdio: "ignore",
    detached: true,
  });
  const pid = child.pid!;
  // Wait until the shell has spawned its sleep, so the group is complete.
  for (let i = 0; i < 200 && (await processGroupMembers(pid)).length < 2; i++)
    await new Promise((r) => setTimeout(r, 10));
  return {
    child,
    pid,
    codexHome: home,
    cwd,
    processInfo: async (paneId) => ({
      paneId,
      shellPid: pid,
      foregroundProcessGroupId: pid,
      tty: "",
      foregroundProcesses: await processGroupMembers(pid),
    }),
    async kill() {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // already gone
      }
      for (let i = 0; i < 200 && (await processGroupMembers(pid)).length > 0; i++)
        await new Promise((r) => setTimeout(r, 10));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
