/**
 * The pane proof on real tmux (private socket), real processes and a real connection: a
 * backend and a TUI launched from the pane's interactive shell, as a harness launch would.
 */
import type { Socket } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { LinuxProofProvider } from "../../../node-agent/proofs/linux.js";
import { provePane, PANE_PROOF_KINDS, type PaneProofRequest } from "../../../node-agent/proofs/pane-proof.js";
import { systemMonotonicClock, type ProofFact } from "../../../node-agent/proofs/proof.js";
import type { ProcessIdentity } from "../../../node-agent/proofs/provider.js";
import { tempDir } from "../../kit/test-db.js";
import { readReport, TmuxServer } from "../../kit/tmux-pane-host.js";
import { connectAccepted } from "../../kit/accepted-connection.js";

const BACKEND = fileURLToPath(new URL("../../kit/proof-processes/backend.mjs", import.meta.url));
const TUI = fileURLToPath(new URL("../../kit/proof-processes/tui.mjs", import.meta.url));
const tmux = new TmuxServer();
const provider = new LinuxProofProvider();
const deps = { host: tmux, provider, clock: systemMonotonicClock };
const pids: number[] = [];
const sockets: Socket[] = [];

afterAll(() => {
  for (const s of sockets) s.destroy();
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  tmux.kill();
});

async function identity(pid: number): Promise<ProcessIdentity> {
  const f = await provider.identify(pid);
  if (!f.known) throw new Error(`pid ${pid}: ${f.detail}`);
  pids.push(pid);
  return { pid, startTime: f.value.startTime };
}

/** Types a launch line into a new pane: the backend in the background, then the TUI, in one foreground job. */
async function launch(session: string, homes: { tui: string; backend: string }) {
  const paneId = tmux.newSession(session);
  const dir = tempDir("pane-proof");
  const backendOut = join(dir, "backend.json");
  const tuiOut = join(dir, "tui.json");
  tmux.type(
    paneId,
    `sh -c 'CODEX_HOME=${homes.backend} node ${BACKEND} ${backendOut} & CODEX_HOME=${homes.tui} node ${TUI} ${tuiOut}; wait'`,
  );
  const b = await readReport<{ pid: number; port: number }>(backendOut);
  const t = await readReport<{ pid: number }>(tuiOut);
  const pane = (await tmux.listPanes()).find((p) => p.paneId === paneId)!;
  return {
    pane: { paneId, terminalId: pane.terminalId, sessionId: pane.sessionId },
    backend: await identity(b.pid),
    tui: await identity(t.pid),
    port: b.port,
  };
}

const connectTo = async (port: number) => (await connectAccepted(port, sockets)).tuple;

const outcomes = (proofs: ProofFact[]) => Object.fromEntries(proofs.map((p) => [p.kind, p.outcome]));

describe("pane-proof.provePane", () => {
  const home = tempDir("codex-home");

  it("a TUI and its backend launched in the pane's foreground, with one private home, reached by the agent's own connection: every proof is proven", async () => {
    const l = await launch("proven", { tui: home, backend: home });
    const req: PaneProofRequest = {
      pane: l.pane,
      tui: l.tui,
      backend: l.backend,
      order: "backend_first",
      harness: "codex",
      home,
      connection: await connectTo(l.port),
    };
    const proofs = await provePane(deps, req);
    expect(proofs.map((p) => p.kind)).toEqual([...PANE_PROOF_KINDS]);
    expect(proofs.filter((p) => p.outcome !== "proven").map((p) => `${p.kind}: ${p.detail}`)).toEqual([]);
  });

  it("the wrong creation order is refuted", async () => {
    const l = await launch("order", { tui: home, backend: home });
    const proofs = await provePane(deps, {
      pane: l.pane,
      tui: l.tui,
      backend: l.backend,
      order: "tui_first",
      harness: "codex",
      home,
      connection: await connectTo(l.port),
    });
    expect(outcomes(proofs)).toMatchObject({ creation_order: "refuted", foreground_ancestry: "proven" });
  });

  it("a backend with a different private home than the TUI is refused", async () => {
    const other = tempDir("codex-other");
    const l = await launch("homes", { tui: home, backend: other });
    const proofs = await provePane(deps, {
      pane: l.pane,
      tui: l.tui,
      backend: l.backend,
      order: "backend_first",
      harness: "codex",
      home,
      connection: await connectTo(l.port),
    });
    expect(outcomes(proofs)).toMatchObject({ private_home: "refuted", connection_tuple: "proven" });
  });

  it("a pane's title confers no authority: processes from another pane are refuted in this one", async () => {
    const here = await launch("titled", { tui: home, backend: home });
    const elsewhere = await launch("elsewhere", { tui: home, backend: home });
    tmux.tmux("select-pane", "-t", here.pane.paneId, "-T", "codex");
    const proofs = await provePane(deps, {
      pane: here.pane,
      tui: elsewhere.tui,
      backend: elsewhere.backend,
      order: "backend_first",
      harness: "codex",
      home,
      connection: await connectTo(elsewhere.port),
    });
    expect(outcomes(proofs)).toMatchObject({ pane_identity: "proven", foreground_ancestry: "refuted" });
  });

  it("a connection that reaches another process's listener is not the backend's", async () => {
    const l = await launch("decoy", { tui: home, backend: home });
    const decoy = await launch("decoy-other", { tui: home, backend: home });
    const proofs = await provePane(deps, {
      pane: l.pane,
      tui: l.tui,
      backend: l.backend,
      order: "backend_first",
      harness: "codex",
      home,
      connection: await connectTo(decoy.port),
    });
    expect(outcomes(proofs)).toMatchObject({ backend_listener: "refuted", connection_tuple: "refuted" });
  });

  it("a TUI that exited is refuted, and a replaced pane terminal is refuted", async () => {
    const l = await launch("gone", { tui: home, backend: home });
    const connection = await connectTo(l.port);
    process.kill(l.tui.pid, "SIGKILL");
    // Its pid stays until the shell reaps it; either way the recorded lifetime is over.
    let proofs: ProofFact[] = [];
    for (let i = 0; i < 100; i++) {
      proofs = await provePane(deps, {
        pane: l.pane,
        tui: l.tui,
        backend: l.backend,
        order: "backend_first",
        harness: "codex",
        home,
        connection,
      });
      if (outcomes(proofs).process_identity === "refuted") break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(outcomes(proofs).process_identity).toBe("refuted");
    const moved = await provePane(deps, {
      pane: { ...l.pane, terminalId: "@999" },
      tui: l.tui,
      backend: l.backend,
      order: "backend_first",
      harness: "codex",
      home,
      connection,
    });
    expect(outcomes(moved).pane_identity).toBe("refuted");
  });
});
