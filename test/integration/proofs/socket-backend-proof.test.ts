/**
 * The socket-backend proof (a daemon the pane's TUI shares over a unix socket, as Codex's
 * app-server-control.sock) against real processes and sockets: every proof is proven for the
 * real arrangement; a connection into another daemon, a TUI joined elsewhere, another home,
 * and a recorded lifetime that is gone are each refuted.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { connect, type Socket } from "node:net";
import { symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { LinuxProofProvider } from "../../../node-agent/proofs/linux.js";
import {
  proveSocketBackend,
  SOCKET_BACKEND_PROOF_KINDS,
  type SocketBackendProofRequest,
} from "../../../node-agent/proofs/socket-backend-proof.js";
import { systemMonotonicClock, type ProofFact } from "../../../node-agent/proofs/proof.js";
import type { ProcessIdentity } from "../../../node-agent/proofs/provider.js";
import { tempDir } from "../../kit/test-db.js";
import { readReport } from "../../kit/tmux-pane-host.js";

const BACKEND = fileURLToPath(new URL("../../kit/proof-processes/backend.mjs", import.meta.url));
const TUI = fileURLToPath(new URL("../../kit/proof-processes/tui.mjs", import.meta.url));
const provider = new LinuxProofProvider();
const deps = { provider, clock: systemMonotonicClock };
const children: ChildProcess[] = [];
const sockets: Socket[] = [];
afterAll(() => {
  for (const s of sockets) s.destroy();
  for (const c of children) c.kill("SIGKILL");
});

async function identity(pid: number): Promise<ProcessIdentity> {
  const f = await provider.identify(pid);
  if (!f.known) throw new Error(f.detail);
  return { pid, startTime: f.value.startTime };
}

async function daemon(home: string): Promise<{ identity: ProcessIdentity; socketPath: string }> {
  const dir = tempDir("daemon");
  const socketPath = join(dir, "app-server-control.sock");
  const child = spawn(process.execPath, [BACKEND, join(dir, "ready.json"), socketPath], {
    env: { ...process.env, CODEX_HOME: home },
    stdio: "ignore",
  });
  children.push(child);
  const { pid } = await readReport<{ pid: number }>(join(dir, "ready.json"));
  return { identity: await identity(pid), socketPath };
}

async function tuiJoined(home: string, socketPath: string): Promise<ProcessIdentity> {
  const out = join(tempDir("tui"), "ready.json");
  const child = spawn(process.execPath, [TUI, out, socketPath], {
    env: { ...process.env, CODEX_HOME: home },
    stdio: "ignore",
  });
  children.push(child);
  return identity((await readReport<{ pid: number }>(out)).pid);
}

async function agentConnection(socketPath: string): Promise<number> {
  const s = await new Promise<Socket>((resolve, reject) => {
    const c = connect(socketPath).once("error", reject);
    c.once("data", () => resolve(c));
  });
  sockets.push(s);
  return (s as unknown as { _handle: { fd: number } })._handle.fd;
}

const outcomes = (proofs: ProofFact[]) => Object.fromEntries(proofs.map((p) => [p.kind, p.outcome]));

describe("socket-backend-proof.proveSocketBackend", () => {
  it("a TUI joined to its home's daemon, reached by the agent's own connection on the same path: every proof is proven", async () => {
    const home = tempDir("codex-home");
    const d = await daemon(home);
    const req: SocketBackendProofRequest = {
      tui: await tuiJoined(home, d.socketPath),
      backend: d.identity,
      harness: "codex",
      home,
      socketPath: d.socketPath,
      agentFd: await agentConnection(d.socketPath),
    };
    const proofs = await proveSocketBackend(deps, req);
    expect(proofs.map((p) => p.kind)).toEqual([...SOCKET_BACKEND_PROOF_KINDS]);
    expect(proofs.filter((p) => p.outcome !== "proven")).toEqual([]);
  });

  it("a socket path that links to where the daemon is bound (Codex links long paths under /tmp/codex-daemon-<uid>/) is proven through the link", async () => {
    const home = tempDir("codex-home");
    const d = await daemon(home);
    const link = join(tempDir("codex-home-control"), "app-server-control.sock");
    symlinkSync(d.socketPath, link);
    const req: SocketBackendProofRequest = {
      tui: await tuiJoined(home, link),
      backend: d.identity,
      harness: "codex",
      home,
      socketPath: link,
      agentFd: await agentConnection(link),
    };
    expect((await proveSocketBackend(deps, req)).filter((p) => p.outcome !== "proven")).toEqual([]);
  });

  it("the agent's connection into another daemon, and a TUI joined elsewhere, are refuted", async () => {
    const home = tempDir("codex-home");
    const d = await daemon(home);
    const decoy = await daemon(home);
    const tui = await tuiJoined(home, decoy.socketPath);
    const proofs = await proveSocketBackend(deps, {
      tui,
      backend: d.identity,
      harness: "codex",
      home,
      socketPath: d.socketPath,
      agentFd: await agentConnection(decoy.socketPath),
    });
    expect(outcomes(proofs)).toMatchObject({
      connection_socket: "refuted",
      tui_connection: "refuted",
      backend_listener: "proven",
      private_home: "proven",
      process_identity: "proven",
    });
  });

  it("a daemon of another home is refuted; a daemon that has exited is refuted, not unknown", async () => {
    const home = tempDir("codex-home");
    const d = await daemon(tempDir("other-home"));
    const req = {
      tui: await tuiJoined(home, d.socketPath),
      backend: d.identity,
      harness: "codex" as const,
      home,
      socketPath: d.socketPath,
      agentFd: await agentConnection(d.socketPath),
    };
    expect(outcomes(await proveSocketBackend(deps, req))).toMatchObject({
      private_home: "refuted",
      connection_socket: "proven",
    });
    process.kill(d.identity.pid, "SIGKILL");
    for (let i = 0; i < 200 && (await provider.identify(d.identity.pid)).known; i++)
      await new Promise((r) => setTimeout(r, 10));
    const gone = outcomes(await proveSocketBackend(deps, req));
    expect(gone.process_identity).toBe("refuted");
    expect(gone.connection_socket).toBe("refuted");
  });
});
