/**
 * Private Windows Codex control (inventory rule 38) against the fake app-server listening on
 * real loopback TCP (standing in for a dedicated `codex app-server --listen ws://127.0.0.1:0`)
 * with a recorded Windows process tree (test/fixtures/proofs/windows/host-processes.json):
 * the kernel's TCP rows are the agent's real connection as Get-NetTCPConnection would show it.
 * Cases: a dedicated app-server with a private home is steered after every proof, re-proven
 * just before dispatch; a decoy listener or decoy peer is refused; `--no-daemon` and `-p`
 * launches are refused with their reason; the shared daemon is never joined and its CLI queue
 * runs only on a freshly proven default home; a private seat never falls through to the CLI.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { WebSocket } from "ws";
import { AgentResult, SeatKind } from "../../../../../shared/verdicts.js";
import { CodexAdapter, codexControlOf } from "../../../../../node-agent/harnesses/codex/adapter.js";
import type { SeatRecord } from "../../../../../node-agent/harnesses/adapter.js";
import { WindowsProofProvider } from "../../../../../node-agent/proofs/windows.js";
import type { HostAnswer, WindowsQuery } from "../../../../../node-agent/proofs/windows-host.js";
import { parseCimProcesses } from "../../../../../node-agent/proofs/windows-parse.js";
import { systemMonotonicClock } from "../../../../../node-agent/proofs/proof.js";
import type { CommandRunner } from "../../../../../node-agent/proofs/run-command.js";
import type { PaneHost, PaneInfo, PaneProcess } from "../../../../../node-agent/panes/pane-host.js";
import { startFakeAppServer, type FakeAppServer } from "../../../../kit/fake-codex-app-server.js";
import { windowsFixture } from "../../../../kit/recorded-windows.js";

const AGENT = 7777;
const PROFILE = "C:\\Users\\Jürgen Ö";
const PRIVATE_HOME = `${PROFILE}\\.codex-seat`;
const CWD = "C:\\work\\repo ä";
const EXE = `${PROFILE}\\AppData\\Roaming\\npm\\node_modules\\@openai\\codex\\vendor\\codex.exe`;
const TREE = parseCimProcesses(windowsFixture("host-processes.json"))!.rows;
const BASE_ENV = ["ALLUSERSPROFILE=C:\\ProgramData", `USERPROFILE=${PROFILE}`, "Path=C:\\Windows\\system32"];

/** A PEB record the host would answer for a pid of the recorded tree. */
function detail(pid: number, env: string[], cwd = `${CWD}\\`) {
  const us = BigInt(TREE.get(pid)!.startTime);
  return JSON.stringify({
    ProcessId: pid,
    CreationFileTime: String((us + 11_644_473_600_000_000n) * 10n),
    Cwd: cwd,
    Environment: env,
  });
}

interface Tree {
  env?: Record<number, string[]>;
  /** Who holds the server's end of the agent's connection (default: the backend, 7300). */
  peer?: number;
  /** Who listens on the server's port (default: the backend). */
  listener?: number;
}

function windowsChannel(server: FakeAppServer, t: Tree = {}) {
  const asked: WindowsQuery[] = [];
  const tcp = (la: number, ra: number, state: number, owner: number) => ({
    LocalAddress: "127.0.0.1",
    LocalPort: la,
    RemoteAddress: "127.0.0.1",
    RemotePort: ra,
    State: state,
    OwningProcess: owner,
  });
  const env = {
    7200: [...BASE_ENV, `CODEX_HOME=${PRIVATE_HOME}`],
    7300: [...BASE_ENV, `CODEX_HOME=${PRIVATE_HOME}`],
    ...t.env,
  };
  const channel = async (q: WindowsQuery): Promise<HostAnswer> => {
    asked.push(q);
    const ok = (data: unknown): HostAnswer => ({
      ok: true,
      data: typeof data === "string" ? data : JSON.stringify(data),
    });
    if (q.op === "processes") return ok(windowsFixture("host-processes.json"));
    if (q.op === "tcp" && q.state === "Listen")
      return ok(q.pid === (t.listener ?? 7300) ? [tcp(server.port, 0, 2, q.pid)] : []);
    if (q.op === "tcp")
      return ok(q.ports ? [tcp(q.ports[0], q.ports[1], 5, AGENT), tcp(q.ports[1], q.ports[0], 5, t.peer ?? 7300)] : []);
    const e = env[q.pid as keyof typeof env];
    return ok(e ? detail(q.pid, e) : JSON.stringify({ ProcessId: q.pid, Error: "gone", Message: "87" }));
  };
  return Object.assign(channel, { asked });
}

/** Thread T, active in turn-1 with cwd CWD; a steer's userMessage appears in its turn. */
function activeThread(state: { clientIds: string[] } = { clientIds: [] }) {
  return (m: { id?: number; method?: string; params?: Record<string, unknown> }, ws: WebSocket) => {
    const reply = (result: unknown) => ws.send(JSON.stringify({ id: m.id, result }));
    switch (m.method) {
      case "thread/loaded/list":
        return reply({ data: ["T"], nextCursor: null });
      case "thread/read":
        return reply({
          thread: {
            id: "T",
            ephemeral: false,
            cwd: CWD,
            parentThreadId: null,
            originator: "codex-tui",
            status: { type: "active", activeFlags: [] },
          },
        });
      case "thread/turns/list":
        return reply({
          data: [
            {
              id: "turn-1",
              status: "inProgress",
              items: state.clientIds.map((c, i) => ({
                type: "userMessage",
                id: `item-${i}`,
                clientId: c,
                content: [],
              })),
            },
          ],
          nextCursor: null,
        });
      case "turn/steer":
        state.clientIds.push(String(m.params?.clientUserMessageId));
        return reply({ turnId: "turn-1" });
      default:
        return reply({});
    }
  };
}

const PANE: PaneInfo = {
  paneId: "w1:p1",
  terminalId: "t-9",
  sessionId: "main",
  title: "codex",
  cwd: CWD,
  agentStatus: "working",
};

function paneHost(foreground: PaneProcess[], info: Partial<PaneInfo> = {}): PaneHost & { terminal: { id: string } } {
  const terminal = { id: PANE.terminalId };
  return {
    kind: "herdr",
    terminal,
    listPanes: async () => [{ ...PANE, ...info, terminalId: terminal.id }],
    processInfo: async (paneId) => ({
      paneId,
      shellPid: 7100,
      foregroundProcessGroupId: 0,
      tty: "",
      foregroundProcesses: foreground,
    }),
    subscribe: async () => () => {},
  };
}

const privateLaunch = (url: string): PaneProcess[] => [
  { pid: 7300, name: "codex.exe", argv: [EXE, "app-server", "--listen", "ws://127.0.0.1:0"] },
  { pid: 7200, name: "codex.exe", argv: [EXE, "--remote", url, "-C", CWD] },
];

function cliRunner(): CommandRunner & {
  calls: { file: string; args: readonly string[]; env: NodeJS.ProcessEnv | undefined }[];
} {
  const calls: { file: string; args: readonly string[]; env: NodeJS.ProcessEnv | undefined }[] = [];
  const run: CommandRunner = async (file, args, o) => {
    calls.push({ file, args, env: o?.env });
    return { code: 0, stdout: "queued q-7", stderr: "", isMissing: false };
  };
  return Object.assign(run, { calls });
}

describe("CodexAdapter on Windows (rule 38)", () => {
  let server: FakeAppServer | undefined;
  let adapter: CodexAdapter | undefined;
  afterEach(async () => {
    adapter?.close();
    await server?.close();
    server = undefined;
  });

  async function setup(t: Tree = {}, foreground?: (url: string) => PaneProcess[], info: Partial<PaneInfo> = {}) {
    server = await startFakeAppServer(activeThread(), PRIVATE_HOME, "tcp");
    const channel = windowsChannel(server, t);
    const provider = new WindowsProofProvider(channel, systemMonotonicClock, AGENT);
    const host = paneHost((foreground ?? privateLaunch)(server.url), info);
    const run = cliRunner();
    adapter = new CodexAdapter({
      clock: systemMonotonicClock,
      paneHost: host,
      proofs: provider,
      callTimeoutMs: 1000,
      confirmTimeoutMs: 500,
      confirmPollMs: 20,
      windows: { run, agentProfile: PROFILE },
    });
    const found = await adapter.discover({ ...PANE, ...info }, await host.processInfo(PANE.paneId));
    const seat: SeatRecord = {
      ...found!,
      pane: { host: "herdr", paneId: PANE.paneId, terminalId: PANE.terminalId, sessionId: PANE.sessionId },
    };
    return { seat, a: adapter, run, host, channel, server };
  }
  const writes = (s: FakeAppServer) =>
    s.received.filter((m) => ["turn/steer", "thread/queue/add", "turn/start"].includes(m.method ?? ""));
  const send = (a: CodexAdapter, seat: SeatRecord, mode: "steer" | "queue" | "auto" = "steer") =>
    a.write(seat, { deliveryId: crypto.randomUUID(), text: "hello from the lead", mode, conversationId: "c" });

  it("a dedicated loopback app-server with the pane's private home: every proof, launch inheritance included, then a steer", async () => {
    const { seat, a, run, server: s } = await setup();
    expect(codexControlOf(seat)).toMatchObject({
      windows: { kind: "private_app_server" },
      backendPid: 7300,
      tuiPid: 7200,
      codexHome: PRIVATE_HOME,
      cwd: CWD,
      threadId: "T",
    });
    const { snapshot, proofs } = await a.inspect(seat);
    expect(proofs.filter((p) => p.outcome !== "proven")).toEqual([]);
    expect(proofs.map((p) => p.kind)).toEqual(
      expect.arrayContaining([
        "private_home",
        "connection_tuple",
        "backend_listener",
        "launch_inheritance",
        "pane_identity",
      ]),
    );
    expect(snapshot.inputCapabilities.deliveryModes).toEqual(["steer", "queue"]);
    expect(await send(a, seat)).toMatchObject({ result: AgentResult.Steered });
    expect(writes(s).map((m) => m.method)).toEqual(["turn/steer"]);
    expect(run.calls).toEqual([]);
  });

  it("the pane is proven again just before dispatch: a terminal replaced after the inspect means nothing is written", async () => {
    const { seat, a, host, server: s } = await setup();
    expect((await a.inspect(seat)).snapshot.inputCapabilities.deliveryModes).toEqual(["steer", "queue"]);
    host.terminal.id = "t-10";
    expect(await send(a, seat)).toMatchObject({
      result: AgentResult.NotSent,
      reason: "proof_failed_before_dispatch",
      detail: expect.stringContaining("pane_identity refuted"),
    });
    expect(writes(s)).toEqual([]);
  });

  it("a decoy holding the other end of the connection, or a decoy listener, is refused; nothing is written and no CLI runs", async () => {
    for (const t of [{ peer: 9000 }, { listener: 9000 }] satisfies Tree[]) {
      const { seat, a, run, server: s } = await setup(t);
      const { snapshot, proofs } = await a.inspect(seat);
      expect(snapshot.inputCapabilities.deliveryModes).toEqual([]);
      expect(proofs.some((p) => p.outcome !== "proven")).toBe(true);
      expect(await send(a, seat, "queue")).toMatchObject({ result: AgentResult.NotSent });
      expect(writes(s)).toEqual([]);
      expect(run.calls).toEqual([]);
      a.close();
      await s.close();
      server = undefined;
    }
  });

  it("a backend that does not inherit the launch (a Codex variable the TUI does not have) is refuted", async () => {
    const { seat, a } = await setup({
      env: { 7300: [...BASE_ENV, `CODEX_HOME=${PRIVATE_HOME}`, "CODEX_SANDBOX=off"] },
    });
    const { proofs, snapshot } = await a.inspect(seat);
    expect(proofs.find((p) => p.kind === "launch_inheritance")).toMatchObject({
      outcome: "refuted",
      detail: expect.stringContaining("CODEX_SANDBOX differs"),
    });
    expect(snapshot.inputCapabilities.deliveryModes).toEqual([]);
  });

  it("a private receipt never falls through to CLI queueing: the app-server gone at the write is not_sent, and no CLI runs", async () => {
    const { seat, a, run, server: s } = await setup();
    await a.inspect(seat);
    await s.close();
    server = undefined;
    await new Promise((r) => setTimeout(r, 20));
    expect(await send(a, seat, "queue")).toMatchObject({ result: AgentResult.NotSent, reason: "control_lost" });
    expect(run.calls).toEqual([]);
  });

  it("--no-daemon and -p/--profile launches are refused with their reason; nothing is connected to", async () => {
    const noDaemon = await setup({ env: { 8100: [...BASE_ENV] } }, () => [
      { pid: 8100, name: "codex.exe", argv: ["codex.exe", "--no-daemon"] },
    ]);
    expect((await noDaemon.a.inspect(noDaemon.seat)).proofs).toEqual([
      expect.objectContaining({
        kind: "codex_windows_control",
        outcome: "refuted",
        detail: expect.stringContaining("no_daemon"),
      }),
    ]);
    expect(await send(noDaemon.a, noDaemon.seat)).toMatchObject({ result: AgentResult.NotSent, reason: "no_daemon" });
    expect(noDaemon.server.received).toEqual([]);
    noDaemon.a.close();
    await noDaemon.server.close();
    const profile = await setup({ env: { 8200: [...BASE_ENV, `CODEX_HOME=${PRIVATE_HOME}`] } }, (url) => [
      { pid: 8200, name: "codex.exe", argv: ["codex.exe", "-p", "work", "--remote", url] },
    ]);
    server = profile.server;
    expect(await send(profile.a, profile.seat, "queue")).toMatchObject({
      result: AgentResult.NotSent,
      reason: "profile_launch",
    });
    expect(profile.server.received).toEqual([]);
    expect(profile.run.calls).toEqual([]);
  });

  it("the shared daemon is never joined; with a freshly proven default home the CLI queues through the native codex.exe without CODEX_HOME", async () => {
    const claim = { agentSession: { agent: "codex", kind: "id" as const, value: "019b-thread" } };
    const shared = (): PaneProcess[] => [{ pid: 7200, name: "codex.exe", argv: [EXE] }];
    const { seat, a, run, channel, server: s } = await setup({ env: { 7200: [...BASE_ENV] } }, shared, claim);
    const { snapshot, proofs } = await a.inspect(seat);
    expect(proofs.find((p) => p.kind === "default_home")).toMatchObject({ outcome: "proven" });
    expect(snapshot.inputCapabilities).toMatchObject({ deliveryModes: ["queue"], interrupt: false });
    expect(await send(a, seat, "steer")).toMatchObject({ result: AgentResult.NotSent });
    await a.inspect(seat);
    const before = channel.asked.filter((q) => q.op === "detail").length;
    expect(await send(a, seat, "queue")).toMatchObject({
      result: AgentResult.Queued,
      nativeReceiptId: "019b-thread/queue/cli",
    });
    // The home was probed again for the dispatch itself.
    expect(channel.asked.filter((q) => q.op === "detail").length).toBeGreaterThan(before);
    expect(run.calls).toHaveLength(1);
    expect(run.calls[0]).toMatchObject({
      file: EXE,
      args: ["queue", "--thread", "019b-thread", "--message", "hello from the lead"],
    });
    expect(Object.keys(run.calls[0]!.env!).some((k) => k.toUpperCase() === "CODEX_HOME")).toBe(false);
    expect(s.received).toEqual([]);
  });

  it("a private or unprovable home refuses the CLI fallback", async () => {
    const claim = { agentSession: { agent: "codex", kind: "id" as const, value: "019b-thread" } };
    const shared = (): PaneProcess[] => [{ pid: 7200, name: "codex.exe", argv: [EXE] }];
    const priv = await setup({ env: { 7200: [...BASE_ENV, `CODEX_HOME=${PRIVATE_HOME}`] } }, shared, claim);
    expect((await priv.a.inspect(priv.seat)).proofs.find((p) => p.kind === "default_home")).toMatchObject({
      outcome: "refuted",
    });
    expect(await send(priv.a, priv.seat, "queue")).toMatchObject({ result: AgentResult.NotSent });
    expect(priv.run.calls).toEqual([]);
    priv.a.close();
    await priv.server.close();
    // No PEB readable for the TUI at all (the host answers "gone"): unknown, refused.
    const unproved = await setup({ env: { 7200: [...BASE_ENV] } }, shared, claim);
    server = unproved.server;
    const seat = unproved.seat;
    const gone = new WindowsProofProvider(
      async (q) =>
        q.op === "detail"
          ? { ok: true, data: JSON.stringify({ ProcessId: q.pid, Error: "access_denied", Message: "5" }) }
          : unproved.channel(q),
      systemMonotonicClock,
      AGENT,
    );
    const a2 = new CodexAdapter({
      clock: systemMonotonicClock,
      paneHost: unproved.host,
      proofs: gone,
      windows: { run: unproved.run, agentProfile: PROFILE },
    });
    expect((await a2.inspect(seat)).proofs.find((p) => p.kind === "default_home")).toMatchObject({
      outcome: "unknown",
    });
    expect(await send(a2, seat, "queue")).toMatchObject({ result: AgentResult.NotSent });
    expect(unproved.run.calls).toEqual([]);
    a2.close();
  });
});

describe("a fact the provider cannot tell refuses the seat, with the provider's reason", () => {
  it("discovery throws CodexFactUnknownError (unsupported platform, access denied); liveness unknown leaves no capabilities", async () => {
    const { UnsupportedProofProvider } = await import("../../../../../node-agent/proofs/unsupported.js");
    const { findCodexTui, CodexFactUnknownError } = await import(
      "../../../../../node-agent/harnesses/codex/process.js"
    );
    const tuiArgv: PaneProcess[] = [{ pid: 7200, name: "codex.exe", argv: [EXE, "--remote", "ws://127.0.0.1:4500"] }];
    await expect(findCodexTui(tuiArgv, new UnsupportedProofProvider("aix"))).rejects.toMatchObject({
      code: "codex_fact_unknown",
      fact: "identity",
      reason: "unsupported",
    });
    const denied = new WindowsProofProvider(
      async (q) =>
        q.op === "processes"
          ? { ok: true, data: windowsFixture("host-processes.json") }
          : {
              ok: true,
              data: JSON.stringify({ ProcessId: 7200, Error: "access_denied", Message: "OpenProcess failed with 5" }),
            },
      systemMonotonicClock,
      AGENT,
    );
    const e = await findCodexTui(tuiArgv, denied).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(CodexFactUnknownError);
    expect(e).toMatchObject({ fact: "home", reason: "permission" });
    const a = new CodexAdapter({ clock: systemMonotonicClock, proofs: new UnsupportedProofProvider("aix") });
    const seat: SeatRecord = {
      name: "cx",
      kind: SeatKind.Codex,
      title: "",
      occupantId: "o",
      createdAtMs: 0,
      control: {
        codexHome: "/h",
        cwd: "/w",
        launch: "remote",
        endpoint: "ws://127.0.0.1:1",
        tuiPid: 1,
        tuiStartTime: 1,
        threadId: "T",
      },
    };
    const { snapshot, proofs } = await a.inspect(seat);
    expect(proofs.find((p) => p.kind === "codex_process")).toMatchObject({
      outcome: "unknown",
      detail: expect.stringContaining("unsupported"),
    });
    expect(snapshot.inputCapabilities.deliveryModes).toEqual([]);
    a.close();
  });
});
