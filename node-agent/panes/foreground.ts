/**
 * A terminal's foreground processes, from the ProofProvider (the pane host holds no process
 * reads of its own): the shell's terminal's foreground group, and its live members with argv.
 * No cwd: the pane proof asks this on every write and needs only pids, and on macOS a cwd is
 * an lsof per process; an adapter that needs one asks the provider itself (codex-process.ts).
 * A fact the provider cannot tell is `undefined` here, never a guess: the pane then shows no
 * foreground processes, so no seat is recognised in it.
 */
import type { ProofProvider } from "../proofs/provider.js";
import type { PaneProcess } from "./pane-host.js";

/** The foreground process group of the terminal `shellPid` belongs to. */
export async function foregroundGroupOf(provider: ProofProvider, shellPid: number): Promise<number | undefined> {
  const shell = await provider.identify(shellPid);
  if (!shell.known) return undefined;
  const fg = await provider.foregroundGroup(shell.value);
  return fg.known && fg.value.foregroundPgid > 0 ? fg.value.foregroundPgid : undefined;
}

/** Members of process group `pgid` with their argv; one that exits meanwhile is left out. */
export async function groupProcesses(provider: ProofProvider, pgid: number): Promise<PaneProcess[]> {
  const members = await provider.groupMembers(pgid);
  if (!members.known) return [];
  const out: PaneProcess[] = [];
  for (const m of members.value) {
    const argv = await provider.commandLine(m);
    if (!argv.known) continue;
    out.push({ pid: m.pid, name: m.name, argv: argv.value.argv });
  }
  return out;
}
