/**
 * Measures the long-lived reader option for macOS proofs (issue 15) on this host's real lsof:
 * one `lsof -r1 ... -F` process in repeat mode, which re-scans and prints an `m` marker line
 * per scan. lsof's repeat delay is whole seconds (`-r0` does not scan continuously: it printed
 * one listing and no marker in 3 s here), so a snapshot is up to a second old. This records, at
 * random instants, how old the latest complete snapshot is (counted, in the reader's favour,
 * from the earliest its scan could have started: the previous marker plus the 1 s delay) and how
 * long a proof would wait for the next scan instead. Used by bench/proof-sources.ts.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { LSOF_SOCKETS_ARGS } from "../node-agent/proofs/darwin-snapshots.js";

export interface RepeatReaderFigures {
  command: string;
  samples: number;
  /** Marker to marker, less the 1 s delay: what one scan costs inside the long-lived process. */
  scanMs: number[];
  /** Age of the latest complete snapshot at a random instant. */
  snapshotAgeMs: number[];
  /** From a random instant to the next scan's marker: what waiting for a fresh snapshot costs. */
  waitForNextScanMs: number[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function measureRepeatReader(samples: number): Promise<RepeatReaderFigures> {
  const args = ["-r1", ...LSOF_SOCKETS_ARGS];
  const child = spawn("lsof", args, {
    stdio: ["ignore", "pipe", "ignore"],
    env: { ...process.env, LC_ALL: "C", LANG: "C", TZ: "UTC" },
  });
  const markers: number[] = [];
  const waiters: ((at: number) => void)[] = [];
  createInterface({ input: child.stdout }).on("line", (line) => {
    if (line[0] !== "m") return;
    const at = performance.now();
    markers.push(at);
    waiters.splice(0).forEach((w) => w(at));
  });
  const nextMarker = () => new Promise<number>((resolve) => waiters.push(resolve));
  try {
    await nextMarker();
    await nextMarker();
    const snapshotAgeMs: number[] = [];
    const waitForNextScanMs: number[] = [];
    for (let i = 0; i < samples; i++) {
      await sleep(Math.random() * 1000);
      const x = performance.now();
      const prev = markers.at(-2)!;
      snapshotAgeMs.push(x - (prev + 1000));
      waitForNextScanMs.push((await nextMarker()) - x);
    }
    const scanMs = markers.slice(1).map((m, i) => m - markers[i]! - 1000);
    return { command: `lsof ${args.join(" ")}`, samples, scanMs, snapshotAgeMs, waitForNextScanMs };
  } finally {
    child.kill("SIGKILL");
  }
}
