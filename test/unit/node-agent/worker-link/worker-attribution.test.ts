/**
 * Rule 48 / issue 13 part 2, the attribution of worker callers (ADR 0050 addendum "Codex
 * callers"): the pure decision over facts already read. Under a Codex app-server the pane
 * tree is not trusted (a shared daemon hosts every thread's MCP servers under one pane):
 * the thread the call names must be a hosted seat's proven thread; without one, only a server
 * hosting exactly one seat attributes, and more is `ambiguous_worker` with the fix. Elsewhere
 * the one seat whose pane shell is an ancestor. Also the app-server argv parsing it relies on.
 */
import { describe, expect, it } from "vitest";
import { SeatKind } from "../../../../shared/verdicts.js";
import type { SeatRecord } from "../../../../node-agent/harnesses/adapter.js";
import {
  attribute,
  hostedSeats,
  isDaemonListen,
  type CodexHost,
} from "../../../../node-agent/worker-link/worker-attribution.js";
import { appServerArgs, listenPathOf } from "../../../../node-agent/harnesses/codex/private-server.js";

const DAEMON = "/h/c/app-server-control/app-server-control.sock";
const seat = (
  name: string,
  o: { kind?: SeatKind; endpoint?: string; threadId?: string; backend?: [number, number] } = {},
): SeatRecord => {
  const base = {
    name,
    title: name,
    occupantId: `occ-${name}`,
    createdAtMs: 0,
    pane: { host: "tmux" as const, paneId: `%${name}`, terminalId: "t", sessionId: "s" },
  };
  // Another harness's seat carries no Codex control (its control is typed by its kind).
  if (o.kind && o.kind !== SeatKind.Codex) return { ...base, kind: o.kind };
  const backend = o.backend ? { backendPid: o.backend[0], backendStartTime: o.backend[1] } : {};
  return {
    ...base,
    kind: SeatKind.Codex,
    control: {
      codexHome: "/h/c",
      cwd: "/w",
      launch: "shared_daemon",
      endpoint: o.endpoint ?? DAEMON,
      threadId: o.threadId,
      ...backend,
    },
  };
};
const daemon: CodexHost = { process: { pid: 50, startTime: 5, ppid: 10, pgid: 50, name: "codex" }, socketPath: DAEMON };

describe("worker caller attribution (rule 48)", () => {
  const one = seat("1", { threadId: "t-1" });
  const two = seat("2", { threadId: "t-2" });
  const pi = seat("pi", { kind: SeatKind.Pi });

  it("rule 48: outside any Codex app-server, the one seat whose pane shell is an ancestor; none or two is not_in_a_seat_pane", () => {
    expect(attribute({ host: undefined, thread: undefined, seats: [pi], paneMatches: [pi] })).toEqual({ seat: pi });
    expect(attribute({ host: undefined, thread: undefined, seats: [pi], paneMatches: [] })).toMatchObject({
      reason: "not_in_a_seat_pane",
    });
    expect(attribute({ host: undefined, thread: undefined, seats: [pi, one], paneMatches: [pi, one] })).toMatchObject({
      reason: "not_in_a_seat_pane",
    });
  });

  it("rule 48: under a shared daemon hosting two seats, the thread the call names decides, whatever pane tree the daemon sits in", () => {
    // The daemon runs under pane 1's TUI: the process tree alone would say seat 1.
    expect(attribute({ host: daemon, thread: "t-2", seats: [one, two], paneMatches: [one] })).toEqual({ seat: two });
    expect(attribute({ host: daemon, thread: "t-1", seats: [one, two], paneMatches: [one] })).toEqual({ seat: one });
  });

  it("rule 48: a thread that is no hosted seat's proven thread is unknown_worker_thread; a server hosting no seat is not_in_a_seat_pane", () => {
    expect(attribute({ host: daemon, thread: "t-9", seats: [one, two], paneMatches: [one] })).toMatchObject({
      reason: "unknown_worker_thread",
    });
    const elsewhere: CodexHost = {
      process: { pid: 77, startTime: 7, ppid: 1, pgid: 77, name: "codex" },
      socketPath: "/other.sock",
    };
    expect(attribute({ host: elsewhere, thread: "t-1", seats: [one, two], paneMatches: [one] })).toMatchObject({
      reason: "not_in_a_seat_pane",
    });
  });

  it("rule 48: no thread named under a server hosting two seats is ambiguous_worker, with the fix; one hosted seat in the caller's pane attributes", () => {
    const r = attribute({ host: daemon, thread: undefined, seats: [one, two], paneMatches: [one] });
    expect(r).toMatchObject({ reason: "ambiguous_worker" });
    expect((r as { detail: string }).detail).toMatch(/hire the seat.*one Codex TUI per CODEX_HOME/);
    expect(attribute({ host: daemon, thread: undefined, seats: [one], paneMatches: [one] })).toEqual({ seat: one });
    expect(attribute({ host: daemon, thread: undefined, seats: [one], paneMatches: [] })).toMatchObject({
      reason: "ambiguous_worker",
    });
  });

  it("ADR 0040 addendum: a hired seat's private app-server hosts only that seat (by its socket, or by its recorded backend lifetime)", () => {
    const hired = seat("h", { endpoint: "unix:///s/hire/codex.sock", threadId: "t-h" });
    const own: CodexHost = {
      process: { pid: 60, startTime: 6, ppid: 59, pgid: 59, name: "codex" },
      socketPath: "/s/hire/codex.sock",
    };
    expect(hostedSeats(own, [one, two, hired, pi])).toEqual([hired]);
    const byLifetime = seat("b", { endpoint: "unix:///elsewhere.sock", backend: [60, 6] });
    expect(hostedSeats(own, [byLifetime])).toEqual([byLifetime]);
    expect(attribute({ host: own, thread: "t-h", seats: [one, two, hired], paneMatches: [hired] })).toEqual({
      seat: hired,
    });
  });

  it("the app-server's own argv: `codex app-server --listen unix://PATH` (vendored or node wrapper) names PATH; the daemon's `unix://` names its default socket; a TUI is no server", () => {
    expect(
      listenPathOf(appServerArgs(["/v/bin/codex", "app-server", "--listen", "unix:///s/a.sock", "-c", "x=1"])!),
    ).toBe("/s/a.sock");
    expect(listenPathOf(appServerArgs(["node", "/n/.bin/codex", "app-server", "--listen=unix:///s/b.sock"])!)).toBe(
      "/s/b.sock",
    );
    expect(appServerArgs(["/d/bin/codex", "app-server", "--listen", "unix://", "--managed-daemon"])).toBeDefined();
    expect(
      listenPathOf(appServerArgs(["/d/bin/codex", "app-server", "--listen", "unix://", "--managed-daemon"])!),
    ).toBeUndefined();
    expect(appServerArgs(["/v/bin/codex", "--remote", "unix:///s/a.sock"])).toBeUndefined();
    // Only the daemon serves its home's default socket; a ws:// or unix://PATH server does not.
    expect(isDaemonListen(["--listen", "unix://", "--managed-daemon"])).toBe(true);
    expect(isDaemonListen([])).toBe(true);
    expect(isDaemonListen(["--listen", "ws://127.0.0.1:4000"])).toBe(false);
    expect(isDaemonListen(["--listen", "unix:///s/a.sock"])).toBe(false);
    expect(appServerArgs(["/usr/bin/node", "/x/cli.js", "worker", "mcp"])).toBeUndefined();
  });
});
