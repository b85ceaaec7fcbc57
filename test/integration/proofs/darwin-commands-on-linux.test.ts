/**
 * The macOS provider's command path run for real: DarwinProofProvider with the real command
 * runner against this Linux host's own `ps` (procps prints the same `-o` fields and `lstart`
 * form) and `lsof -F` (the same program as on macOS). Real processes, a real loopback
 * listener, a real connection, a working directory with a non-ASCII name (which lsof escapes
 * in the C locale). What this cannot show: macOS's own ps/lsof behaviour, and `ps -E`
 * (environment, a BSD option procps rejects: asserted as `race` here, never a guessed home).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import type { Socket } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { DarwinProofProvider } from "../../../node-agent/proofs/darwin.js";
import { LinuxProofProvider } from "../../../node-agent/proofs/linux.js";
import { runCommand } from "../../../node-agent/proofs/run-command.js";
import { systemMonotonicClock } from "../../../node-agent/proofs/proof.js";
import { tempDir } from "../../kit/test-db.js";
import { readReport } from "../../kit/tmux-pane-host.js";
import { connectAccepted } from "../../kit/accepted-connection.js";

const BACKEND = fileURLToPath(new URL("../../kit/proof-processes/backend.mjs", import.meta.url));
const darwin = new DarwinProofProvider(systemMonotonicClock, runCommand, process.getuid!(), process.pid);
const linux = new LinuxProofProvider();
const children: ChildProcess[] = [];
const sockets: Socket[] = [];
afterAll(() => {
  sockets.forEach((s) => s.destroy());
  children.forEach((c) => c.kill("SIGKILL"));
});

async function backend() {
  const cwd = join(tempDir("c15-darwin-cmds"), "café repo");
  mkdirSync(cwd);
  const out = join(cwd, "backend.json");
  const child = spawn(process.execPath, [BACKEND, out], { cwd, stdio: "ignore" });
  children.push(child);
  const r = await readReport<{ pid: number; port: number }>(out);
  return { ...r, cwd };
}

describe("darwin provider on real ps and lsof (this Linux host)", () => {
  it("identity from ps matches the process; a wrong start time is pid_gone; ancestry reaches this test process", async () => {
    const b = await backend();
    const id = await darwin.identify(b.pid);
    expect(id).toMatchObject({ known: true, value: { pid: b.pid, ppid: process.pid } });
    const self = id.known ? id.value : undefined;
    const chain = await darwin.ancestry(self!);
    expect(chain.known && chain.value.chain.map((e) => e.pid).slice(0, 2)).toEqual([b.pid, process.pid]);
    expect(await darwin.commandLine({ pid: b.pid, startTime: self!.startTime - 5 })).toMatchObject({
      known: false,
      reason: "pid_gone",
    });
  });

  it("command line, and a non-ASCII cwd decoded from lsof's escapes, agree with /proc", async () => {
    const b = await backend();
    const id = (await darwin.identify(b.pid)) as { known: true; value: { pid: number; startTime: number } };
    // ps joins argv with spaces: the path with a space comes back as two words, flagged inexact; the non-ASCII letters survive.
    const argv = await darwin.commandLine(id.value);
    expect(argv).toMatchObject({ known: true, value: { isExact: false } });
    expect(argv.known && argv.value.argv.join(" ")).toBe(
      [process.execPath, BACKEND, join(b.cwd, "backend.json")].join(" "),
    );
    const cwd = await darwin.cwd(id.value);
    const procCwd = await linux.cwd(
      ((await linux.identify(b.pid)) as { known: true; value: { pid: number; startTime: number } }).value,
    );
    expect(cwd).toMatchObject({ known: true, value: b.cwd });
    expect(procCwd).toMatchObject({ known: true, value: b.cwd });
  });

  it("the backend's loopback listener and the other end of this process's own connection, from lsof", async () => {
    const b = await backend();
    const id = (await darwin.identify(b.pid)) as { known: true; value: { pid: number; startTime: number } };
    expect(await darwin.listeners(id.value)).toMatchObject({
      known: true,
      value: {
        listeners: expect.arrayContaining([{ transport: "tcp", address: "127.0.0.1", port: b.port, isLoopback: true }]),
      },
    });
    const { tuple } = await connectAccepted(b.port, sockets);
    expect(await darwin.connectionPeer(tuple)).toMatchObject({
      known: true,
      value: { isAgentEnd: true, peers: [{ pid: b.pid, startTime: id.value.startTime }], isComplete: true },
    });
  });

  it("the environment needs macOS's ps -E: procps refuses it, which is race, never a guessed home", async () => {
    const b = await backend();
    const id = (await darwin.identify(b.pid)) as { known: true; value: { pid: number; startTime: number } };
    expect(await darwin.home(id.value, "codex")).toMatchObject({ known: false, reason: "race" });
  });
});
