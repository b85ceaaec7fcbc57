/**
 * Measures the other long-lived reader option for macOS proofs (issue 15): one `/bin/sh` the
 * agent would keep, running each ps/lsof on request, so Node does not spawn a process per
 * command (Node's own spawn is what a small shell's fork would save). Each command is run
 * alternately through that shell and through the provider's runner (run-command.ts), so both
 * see the same load. Only the fixed argv below is written to the shell. Used by
 * bench/proof-sources.ts; it decides whether such a host is worth building.
 */
import { spawn } from "node:child_process";
import { PS_ARGS, LSOF_SOCKETS_ARGS } from "../node-agent/proofs/darwin-snapshots.js";
import { runCommand } from "../node-agent/proofs/run-command.js";

export interface ShellHostFigures {
  command: string;
  viaShellMs: number[];
  viaSpawnMs: number[];
}

const COMMANDS: [string, readonly string[]][] = [
  ["true", []],
  ["ps", PS_ARGS],
  ["lsof", LSOF_SOCKETS_ARGS],
];

export async function measureShellHost(samples: number): Promise<ShellHostFigures[]> {
  const sh = spawn("/bin/sh", [], {
    stdio: ["pipe", "pipe", "ignore"],
    env: { ...process.env, LC_ALL: "C", LANG: "C", TZ: "UTC" },
  });
  const marker = `__clankie_bench_${process.pid}_done`;
  let buffered = "";
  let waiter: (() => void) | undefined;
  sh.stdout.on("data", (d: Buffer) => {
    buffered += d.toString("utf8");
    if (buffered.includes(`${marker}\n`)) {
      buffered = "";
      waiter?.();
    }
  });
  const viaShell = (file: string, args: readonly string[]) =>
    new Promise<void>((resolve) => {
      waiter = resolve;
      sh.stdin.write(`${[file, ...args].map((a) => `'${a}'`).join(" ")} 2>/dev/null; echo; echo ${marker}\n`);
    });
  try {
    const out: ShellHostFigures[] = [];
    for (const [file, args] of COMMANDS) {
      const viaShellMs: number[] = [];
      const viaSpawnMs: number[] = [];
      for (let i = 0; i <= samples; i++) {
        let t = performance.now();
        await viaShell(file, args);
        const a = performance.now() - t;
        t = performance.now();
        await runCommand(file, args);
        const b = performance.now() - t;
        if (i === 0) continue;
        viaShellMs.push(a);
        viaSpawnMs.push(b);
      }
      out.push({ command: [file, ...args].join(" "), viaShellMs, viaSpawnMs });
    }
    return out;
  } finally {
    sh.kill("SIGKILL");
  }
}
