/**
 * The tmux control-mode client against a real tmux server on a private socket: queries are
 * answered by one attached, read-only, size-ignoring client (no fork per query); commands
 * that could type or change anything are refused before they reach tmux; a server that is
 * not running, or goes away, means "fork instead", and the client re-attaches when it is back.
 */
import { afterAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { TmuxControlClient, quoteTmuxArgument } from "../../../../node-agent/panes/tmux-control.js";
import { tmuxSocketFile } from "../../../../node-agent/panes/tmux.js";

const TMUX = "/usr/bin/tmux";
const name = `clankie-ctl-${process.pid}`;
const tmux = (...a: string[]) => execFileSync(TMUX, ["-L", name, "-f", "/dev/null", ...a], { encoding: "utf8" }).trim();
const killServer = () => {
  try {
    execFileSync(TMUX, ["-L", name, "kill-server"], { stdio: "ignore" });
  } catch {
    // not running
  }
};
const clients: TmuxControlClient[] = [];
const client = (retryAfterMs = 1000) => {
  // As TmuxPaneHost builds it: with the server's socket file, so no attach is tried (and no
  // short-lived server started) while there is no server.
  const c = new TmuxControlClient(TMUX, ["-L", name], {
    retryAfterMs,
    socketFile: tmuxSocketFile({ socketName: name }),
  });
  clients.push(c);
  return c;
};

afterAll(() => {
  for (const c of clients) c.close();
  killServer();
});

describe("tmux-control.TmuxControlClient", () => {
  it("answers listing queries over one attached read-only control client that ignores size", async () => {
    tmux("new-session", "-d", "-s", "ctl", "-x", "100", "-y", "30", "/bin/sleep", "300");
    const c = client();
    const a = await c.command(["list-panes", "-a", "-F", "#{pane_id}\t#{session_name}"]);
    expect(a).toEqual({ ok: true, stdout: expect.stringMatching(/^%\d+\tctl\n$/) });
    const b = await c.command(["display-message", "-p", "#{session_name}"]);
    expect(b).toEqual({ ok: true, stdout: "ctl\n" });
    // One control client served both: no fork per query, and it cannot type or resize.
    expect(tmux("list-clients", "-F", "#{client_control_mode} #{client_readonly} #{client_flags}")).toMatch(
      /^1 1 .*ignore-size/,
    );
    expect(tmux("display-message", "-p", "-t", "ctl", "#{window_width}x#{window_height}")).toBe("100x30");
  });

  it("a tmux error is a failed reply, matched to its own command, not to the next one", async () => {
    const c = client();
    const [bad, good] = await Promise.all([
      c.command(["list-panes", "-t", "%9999"]),
      c.command(["display-message", "-p", "ok"]),
    ]);
    expect(bad).toEqual({ ok: false, stderr: expect.stringContaining("%9999") });
    expect(good).toEqual({ ok: true, stdout: "ok\n" });
  });

  it("refuses any command that is not a read-only query, before it reaches tmux (nothing is ever typed)", async () => {
    const c = client();
    await expect(c.command(["send-keys", "-t", "ctl", "hello", "Enter"])).rejects.toThrow(/not a read-only query/);
    await expect(c.command(["kill-server"])).rejects.toThrow(/not a read-only query/);
    expect(tmux("list-sessions", "-F", "#{session_name}")).toBe("ctl");
  });

  it("an argument single quotes cannot carry is not sent: the caller forks instead", async () => {
    expect(quoteTmuxArgument("it's")).toBeUndefined();
    expect(quoteTmuxArgument("a\nb")).toBeUndefined();
    expect(await client().command(["display-message", "-p", "it's"])).toBeUndefined();
  });

  const serverGone = async () => {
    // kill-server returns before the old server has let go of its socket; a new-session then
    // would meet the dying server ("server exited unexpectedly").
    for (let i = 0; i < 200 && existsSync(tmuxSocketFile({ socketName: name })); i++)
      await new Promise((r) => setTimeout(r, 10));
  };

  it("no server means no answer (fork instead); once the server is back it re-attaches", async () => {
    killServer();
    await serverGone();
    const c = client(50);
    expect(await c.command(["list-sessions"])).toBeUndefined();
    // tmux itself sometimes fails a server start on a socket name whose last server just died
    // ("server exited unexpectedly"); that is tmux's race, not the client's, so try again.
    for (let i = 0; ; i++) {
      try {
        tmux("new-session", "-d", "-s", "back", "/bin/sleep", "300");
        break;
      } catch (e) {
        if (i >= 4 || !/server exited unexpectedly/.test(String((e as { stderr?: unknown }).stderr ?? e))) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await new Promise((r) => setTimeout(r, 120));
    expect(await c.command(["display-message", "-p", "#{session_name}"])).toEqual({ ok: true, stdout: "back\n" });
    // The server goes away under an attached client: pending and later queries fall back.
    killServer();
    await serverGone();
    await new Promise((r) => setTimeout(r, 50));
    expect(await c.command(["list-sessions"])).toBeUndefined();
  });
});
