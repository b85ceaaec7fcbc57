/**
 * Issue 35 item 1: a seat whose harness cannot work is shown as such, with the reason. A real
 * OpenCode TUI an owner started in a pane (`opencode --port P --session S`), configured for
 * `anthropic/claude-sonnet-4-5` with no key for Anthropic: the pinned 1.18.33 would take a
 * prompt and fail its turn at once ("Model not found"), reading idle again. list_seats carries
 * `cannotWork {reason: "no_api_key"}` from OpenCode's own `/config/providers` answer and offers no
 * delivery mode, and `clankie seat list` shows the same. The lead's message_seat to it is refused
 * with the typed `seat_cannot_work` (node-agent/deliver/deliver.ts) before anything is written:
 * the session OpenCode itself serves holds no message, and no model was asked.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt, runCli } from "../kit/cli.js";
import { readCmdline } from "../../node-agent/proofs/linux-read.js";
import { requireHarness } from "./kit/harness-bin.js";
import { freePort } from "./kit/opencode-server.js";
import { prepareWorkerReportStore, startWorkerReportFleet, type WorkerReportFleet } from "./kit/worker-report-fleet.js";

const bin = requireHarness("opencode");
const TMUX = "/usr/bin/tmux";

type SeatRow = { id: string; inputCapabilities: { deliveryModes: string[] }; cannotWork?: unknown };

/** A session in WORK made by a short-lived `opencode serve` over the same homes (no model: the config's). */
async function createSession(env: Record<string, string>, work: string): Promise<string> {
  const port = await freePort();
  const child = spawn(bin!, ["serve", "--port", String(port), "--hostname", "127.0.0.1"], {
    cwd: work,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  try {
    let log = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`opencode serve did not start: ${log}`)), 60_000);
      const onData = (c: Buffer) => {
        log += c.toString();
        if (log.includes("listening on")) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
    });
    const res = await fetch(`http://127.0.0.1:${port}/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ location: { directory: work } }),
    });
    const body = (await res.json()) as { data?: { id?: string } };
    if (!body.data?.id) throw new Error(`session create failed: ${JSON.stringify(body)}`);
    return body.data.id;
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
}

describe.runIf(bin)("an OpenCode seat that cannot take a turn (no key for its model's provider)", () => {
  let mock: MockAnthropicServer;
  let fleet: WorkerReportFleet;
  let tmuxSock = "";
  let seat: SeatRow;
  let last: SeatRow[] = [];
  let diagnosis = "";
  /** The TUI's own server, and the session it shows. */
  let tuiUrl = "";
  let sessionId = "";

  beforeAll(async () => {
    assertBuilt();
    mock = await startMockAnthropicServer();
    const store = await prepareWorkerReportStore();
    const root = join(store.stateDir, "opencode-seat");
    const env: Record<string, string> = { PATH: process.env.PATH ?? "", TERM: "xterm-256color" };
    for (const [k, sub] of Object.entries({
      HOME: "home",
      XDG_CONFIG_HOME: "config",
      XDG_DATA_HOME: "data",
      XDG_STATE_HOME: "state",
      XDG_CACHE_HOME: "cache",
    })) {
      mkdirSync(join(root, sub), { recursive: true });
      env[k] = join(root, sub);
    }
    const work = join(root, "work");
    mkdirSync(join(root, "config/opencode"), { recursive: true });
    mkdirSync(work, { recursive: true });
    writeFileSync(
      join(root, "config/opencode/opencode.json"),
      JSON.stringify({
        $schema: "https://opencode.ai/config.json",
        model: "anthropic/claude-sonnet-4-5",
        autoupdate: false,
        share: "disabled",
      }),
    );
    sessionId = await createSession(env, work);
    tmuxSock = join(root, "tmux.sock");
    execFileSync(TMUX, [
      ...["-S", tmuxSock, "-f", "/dev/null", "new-session", "-d", "-s", "oc", "-x", "160", "-y", "40", "-c", work],
      ...["/bin/sleep", "600"],
    ]);
    fleet = await startWorkerReportFleet(store, mock, tmuxSock);
    // The TUI's port is chosen once the fleet's own listeners are bound, and the pane then runs the TUI:
    // a port picked before them could be taken by one of theirs before the TUI binds it.
    const port = await freePort();
    tuiUrl = `http://127.0.0.1:${port}`;
    execFileSync(TMUX, [
      ...["-S", tmuxSock, "respawn-pane", "-k", "-t", "oc", "-c", work],
      "/usr/bin/env",
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      ...[bin!, "--port", String(port), "--hostname", "127.0.0.1", "--session", sessionId],
    ]);
    for (let i = 0; i < 450 && !seat; i++) {
      last = (await fleet.lead.call("list_seats", {})).structuredContent?.seats as SeatRow[];
      seat = last.find((s) => s.id.startsWith("workbox/opencode-") && s.cannotWork)!;
      if (!seat) await new Promise((r) => setTimeout(r, 200));
    }
    if (!seat) diagnosis = await diagnose();
  });

  /** What the TUI's own server and pane show, for a failure message. */
  async function diagnose(): Promise<string> {
    const t0 = Date.now();
    let server: string;
    try {
      const res = await fetch(`${tuiUrl}/session/${encodeURIComponent(sessionId)}`, {
        signal: AbortSignal.timeout(10_000),
      });
      server = `HTTP ${res.status} after ${Date.now() - t0} ms: ${(await res.text()).slice(0, 300)}`;
    } catch (e) {
      server = `${(e as Error).message} after ${Date.now() - t0} ms`;
    }
    let pane = "";
    try {
      pane = execFileSync(TMUX, ["-S", tmuxSock, "capture-pane", "-p", "-t", "oc"], { encoding: "utf8" });
    } catch (e) {
      pane = (e as Error).message;
    }
    return `the TUI's server: ${server}\nthe pane:\n${pane.trim().slice(-1500)}`;
  }
  afterAll(async () => {
    await fleet?.close();
    try {
      if (tmuxSock) {
        // OpenCode 1.18.33's TUI can outlive its pane (seen at ~100% CPU after kill-server): end ours by pid first.
        const ours = readdirSync("/proc")
          .filter((d) => /^\d+$/.test(d))
          .map(Number)
          .filter((pid) => {
            const argv = readCmdline(pid);
            return Array.isArray(argv) && argv.includes(sessionId) && argv.includes(tuiUrl.split(":").pop()!);
          });
        const alive = (pid: number) => existsSync(`/proc/${pid}`);
        for (const pid of ours) process.kill(pid, "SIGTERM");
        for (let i = 0; i < 30 && ours.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
        for (const pid of ours.filter(alive)) process.kill(pid, "SIGKILL");
        execFileSync(TMUX, ["-S", tmuxSock, "kill-server"], { stdio: "ignore" });
      }
    } catch {
      // already gone
    }
    await mock?.close();
  });

  it("list_seats shows cannotWork with OpenCode's own answer and offers no delivery mode", () => {
    expect(seat, `no OpenCode seat with cannotWork appeared: ${JSON.stringify(last)}\n${diagnosis}`).toBeDefined();
    expect(seat.cannotWork).toEqual({
      reason: "no_api_key",
      detail: expect.stringMatching(/\/config\/providers lists no provider anthropic .*anthropic\/claude-sonnet-4-5/),
    });
    expect(seat.inputCapabilities.deliveryModes).toEqual([]);
  });

  it("clankie seat list shows the same: modes none, and the reason", async () => {
    const json = await runCli(["seat", "list", "--json", "--state-dir", fleet.stateDir]);
    expect(json.code, json.stderr).toBe(0);
    const row = (JSON.parse(json.stdout) as { seats: Record<string, unknown>[] }).seats.find((s) => s.id === seat.id);
    expect(row).toMatchObject({ modes: "none", cannotWork: expect.stringMatching(/^no_api_key: OpenCode's/) });
  });

  it("message_seat is refused before anything is written: seat_cannot_work, the session and the model see nothing", async () => {
    const text = `never to a keyless OpenCode ${seat.id}`;
    const res = await fleet.lead.call("message_seat", { seat: seat.id, message: text });
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
      outcome: "undelivered",
      reason: "seat_cannot_work",
    });
    const messages = await fetch(`${tuiUrl}/session/${encodeURIComponent(sessionId)}/message`);
    expect(messages.status).toBe(200);
    expect(JSON.stringify(await messages.json())).not.toContain(text);
    expect(mock.userMessagesContaining(text)).toBe(0);
  });
});
