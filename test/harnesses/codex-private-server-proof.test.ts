/**
 * ADR 0040 addendum (issue 12 item 5): the `private_app_server` proof on real processes. One
 * tmux pane runs the hire's pane runner (its own `codex app-server --listen unix://SOCK` and the
 * TUI on `--remote unix://SOCK`); another pane's TUI is on `--remote` to a real app-server started
 * outside any pane. The proof, from the kernel and the pane host: the first pane's backend is
 * proven its own; the second is refuted (not in its pane's tree); and a backend that listens on
 * another socket than the seat's is refuted by its own flags, whatever pane it is in.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, type ChildProcess } from "node:child_process";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { silentLogger } from "../../shared/logger.js";
import { AdapterRegistry } from "../../node-agent/harnesses/registry.js";
import { CodexAdapter, codexControlOf } from "../../node-agent/harnesses/codex/adapter.js";
import { privateServerProof } from "../../node-agent/harnesses/codex/private-server.js";
import { TmuxPaneHost } from "../../node-agent/panes/tmux.js";
import { SeatBook } from "../../node-agent/seats/seat-book.js";
import { startSeatDiscovery, type SeatDiscovery } from "../../node-agent/seats/discovery.js";
import { systemMonotonicClock } from "../../node-agent/proofs/proof.js";
import { selectProofProvider } from "../../node-agent/proofs/select.js";
import type { SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { assertBuilt } from "../kit/cli.js";
import { installedFile } from "../../node-agent/hire/launcher.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, startAppServer, type CodexEnv } from "./kit/codex-env.js";

const bin = requireHarness("codex");
const TMUX = "/usr/bin/tmux";

async function until<T>(probe: () => T | undefined, what: string, tries = 600): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened: ${what}`);
}

describe("private_app_server: a hired Codex's backend is its own pane's app-server", () => {
  let mock: MockResponsesServer;
  let cx: CodexEnv;
  let outside: ChildProcess;
  const tmuxName = `clankie-cxprv-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync(TMUX, ["-L", tmuxName, ...args], { encoding: "utf8" }).trim();
  let host: TmuxPaneHost;
  let adapter: CodexAdapter;
  let seats: SeatBook;
  let discovery: SeatDiscovery;
  let ownPane: string;
  let outPane: string;
  const provider = selectProofProvider("linux", systemMonotonicClock);

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    assertBuilt();
    mock = await startMockResponsesServer();
    cx = makeCodexEnv(bin, mock.baseUrl);
    const work2 = join(cx.root, "w2");
    mkdirSync(work2);
    appendFileSync(join(cx.codexHome, "config.toml"), `\n[projects."${work2}"]\ntrust_level = "trusted"\n`);
    const own = join(cx.root, "own.sock");
    const spec = join(cx.root, "spec.json");
    writeFileSync(
      spec,
      JSON.stringify({
        bin,
        socketPath: own,
        serverArgs: [],
        tuiArgs: ["-C", cx.workDir],
        serverLog: join(cx.root, "own.log"),
      }),
    );
    const elsewhere = join(cx.root, "out.sock");
    outside = await startAppServer(bin, cx, elsewhere);
    const env = Object.entries(cx.env).map(([k, v]) => `${k}=${v}`);
    tmux(
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "prv",
      "-x",
      "200",
      "-y",
      "50",
      "-c",
      cx.workDir,
      "/usr/bin/env",
      ...env,
      process.execPath,
      installedFile("node-agent/harnesses/codex/pane-runner.js"),
      spec,
    );
    tmux(
      "new-window",
      "-d",
      "-t",
      "prv:",
      "-c",
      work2,
      "/usr/bin/env",
      ...env,
      bin,
      "--remote",
      `unix://${elsewhere}`,
      "-C",
      work2,
    );
    ownPane = tmux("display-message", "-p", "-t", "prv:0", "#{pane_id}");
    outPane = tmux("display-message", "-p", "-t", "prv:1", "#{pane_id}");
    host = new TmuxPaneHost({ socketName: tmuxName, pollMs: 200, tmuxBin: TMUX });
    adapter = new CodexAdapter({ clock: systemMonotonicClock, paneHost: host, proofs: provider });
    const adapters = new AdapterRegistry();
    adapters.register(adapter);
    mkdirSync(join(cx.root, "seats"));
    seats = new SeatBook(join(cx.root, "seats"));
    discovery = await startSeatDiscovery({ host, adapters, seats, logger: silentLogger, rescanMs: 300 });
  });

  afterAll(async () => {
    discovery?.close();
    adapter?.close();
    try {
      execFileSync(TMUX, ["-L", tmuxName, "kill-server"], { stdio: "ignore" });
    } catch {
      // already gone
    }
    outside?.kill("SIGKILL");
    if (cx) cleanupCodexEnv(bin!, cx);
    await mock?.close();
  });

  const seatIn = (pane: string) =>
    until(() => {
      const s = seats.all().find((x) => x.pane?.paneId === pane);
      const c = s && codexControlOf(s);
      return c?.threadId && c.backendPid !== undefined ? s : undefined;
    }, `a codex seat in ${pane} with its thread and backend`);
  const deps = () => ({ provider, host, clock: systemMonotonicClock });

  it("ADR 0040 addendum: the runner's app-server is proven the pane's own", async () => {
    const seat = await seatIn(ownPane);
    const p = await privateServerProof(deps(), seat, codexControlOf(seat)!);
    expect(p, p.detail).toMatchObject({ kind: "private_app_server", outcome: "proven" });
  });

  it("ADR 0040 addendum: an app-server outside the pane (a TUI on --remote to it) is refuted", async () => {
    const seat = await seatIn(outPane);
    const p = await privateServerProof(deps(), seat, codexControlOf(seat)!);
    expect(p.outcome).toBe("refuted");
    expect(p.detail).toMatch(/does not run in pane/);
  });

  it("ADR 0040 addendum: a backend listening on another socket than the seat's is refuted by its own flags", async () => {
    const own = await seatIn(ownPane);
    const other = codexControlOf(await seatIn(outPane))!;
    const ctl = { ...codexControlOf(own)!, backendPid: other.backendPid, backendStartTime: other.backendStartTime };
    const p = await privateServerProof(deps(), own as SeatRecord, ctl);
    expect(p.outcome).toBe("refuted");
    expect(p.detail).toMatch(/not the seat's private/);
  });
});
