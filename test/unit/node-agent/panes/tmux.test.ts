/**
 * The tmux pane host against a real tmux server on a private socket (`tmux -L`): panes,
 * tty, shell pid and foreground processes, changes by polling, a missing server as an
 * answer, and no typing anywhere in the node agent.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { TmuxPaneHost, parseListPanes } from "../../../../node-agent/panes/tmux.js";
import type { PaneEvent } from "../../../../node-agent/panes/pane-host.js";

const TMUX = "/usr/bin/tmux";
const ROOT = fileURLToPath(new URL("../../../..", import.meta.url));

async function until(pred: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (pred()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never happened: ${what}`);
}

describe("TmuxPaneHost", () => {
  const name = `clankie-unit-${process.pid}`;
  const tmux = (...a: string[]) => execFileSync(TMUX, ["-L", name, ...a], { encoding: "utf8" }).trim();
  const host = new TmuxPaneHost({ socketName: name, tmuxBin: TMUX, pollMs: 50 });
  let first: string;

  beforeAll(() => {
    tmux(
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "unit",
      "-x",
      "120",
      "-y",
      "30",
      "-c",
      "/tmp",
      "/bin/sleep",
      "300",
    );
    first = tmux("display-message", "-p", "-t", "unit:0", "#{pane_id}");
  });
  afterAll(() => {
    try {
      execFileSync(TMUX, ["-L", name, "kill-server"], { stdio: "ignore" });
    } catch {
      // already gone
    }
  });

  it("lists panes with their window and session, and reads the foreground process from /proc", async () => {
    const panes = await host.listPanes();
    expect(panes).toEqual([
      expect.objectContaining({ paneId: first, sessionId: "unit", cwd: "/tmp", agentStatus: "unknown" }),
    ]);
    expect(panes[0]!.terminalId).toMatch(/^@\d+$/);
    const info = await host.processInfo(first);
    expect(info.tty).toMatch(/^\/dev\/pts\/\d+$/);
    expect(info.foregroundProcessGroupId).toBe(info.shellPid);
    expect(info.foregroundProcesses).toEqual([{ pid: info.shellPid, name: "sleep", argv: ["/bin/sleep", "300"] }]);
  });

  it("an unknown pane has no processes rather than an exception", async () => {
    expect(await host.processInfo("%999")).toMatchObject({ shellPid: -1, foregroundProcesses: [] });
  });

  it("reports panes created, replaced and closed by polling", async () => {
    const events: PaneEvent[] = [];
    const stop = await host.subscribe((e) => events.push(e));
    const second = tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "unit", "/bin/sleep", "300");
    await until(() => events.some((e) => e.kind === "pane_created" && e.paneId === second), "created");
    tmux("respawn-pane", "-k", "-t", second, "/bin/sleep", "301");
    await until(() => events.some((e) => e.kind === "pane_updated" && e.paneId === second), "updated");
    tmux("kill-pane", "-t", second);
    await until(() => events.some((e) => e.kind === "pane_closed" && e.paneId === second), "closed");
    stop();
  });

  it("a tmux server that is not running means no panes, not a failure", async () => {
    const none = new TmuxPaneHost({ socketName: `clankie-none-${process.pid}`, tmuxBin: TMUX });
    expect(await none.list()).toMatchObject({ ok: false, reason: "no_server" });
    expect(await none.listPanes()).toEqual([]);
  });

  it("skips malformed list-panes lines instead of guessing", () => {
    const good = "%1\t@1\tmain\t/dev/pts/1\t123\t/repo\ttitle with\ttab";
    expect(
      parseListPanes(
        ["garbage", "%2\t@1\tmain", "%x\t@1\tm\t/dev/pts/1\t1\t/\tt", good, "%3\t@1\tm\t/dev/pts/2\t-4\t/\tt"].join(
          "\n",
        ),
      ),
    ).toEqual([
      {
        paneId: "%1",
        terminalId: "@1",
        sessionId: "main",
        tty: "/dev/pts/1",
        shellPid: 123,
        cwd: "/repo",
        title: "title with\ttab",
        agentStatus: "unknown",
      },
    ]);
  });

  it("pane hosts, discovery and the Codex adapter never type into a pane: no send-keys, no Herdr send/prompt call", () => {
    const files = readdirSync(join(ROOT, "node-agent"), { recursive: true })
      .map(String)
      .filter(
        (f) => f.endsWith(".ts") && (f.startsWith("panes/") || f.startsWith("seats/") || /^harnesses\/codex/.test(f)),
      );
    expect(files).toContain("panes/tmux.ts");
    const offenders = files.filter((f) => {
      const code = readFileSync(join(ROOT, "node-agent", f), "utf8");
      // Quoted method or command names are calls; the refusal list in herdr-client.ts is the one allowed mention.
      const quoted = /["'](send-keys|pane\.send_(text|keys|input)|agent\.(prompt|send_keys|send))["']/.test(code);
      return quoted && !f.endsWith("panes/herdr-client.ts");
    });
    expect(offenders).toEqual([]);
  });
});
