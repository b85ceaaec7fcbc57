/**
 * Recognising an OpenCode TUI in a pane from its foreground process's argv: it must name a
 * reachable server (`--port N`, or `attach URL`) and its exact session (`--session ID`).
 * Anything less cannot be bound to the session the owner sees, so it is not a seat.
 */
import { SeatKind } from "../../../shared/verdicts.js";
import type { PaneInfo, PaneProcessInfo } from "../../panes/pane-host.js";
import type { SeatRecord } from "../adapter.js";

function flag(argv: string[], ...names: string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    for (const n of names) {
      if (a === n) return argv[i + 1];
      if (a.startsWith(`${n}=`)) return a.slice(n.length + 1);
    }
  }
  return undefined;
}

/** The server URL and session an OpenCode argv names, if it names both. */
export function openCodeTarget(argv: string[]): { baseUrl: string; sessionId: string } | undefined {
  const at = argv.findIndex((a) => /(^|\/)opencode(\.exe)?$/.test(a));
  if (at < 0) return undefined;
  const args = argv.slice(at + 1);
  const sessionId = flag(args, "--session", "-s");
  if (!sessionId || !/^ses[A-Za-z0-9_]+$/.test(sessionId)) return undefined;
  if (args[0] === "attach" && args[1] && /^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\/?$/.test(args[1])) {
    return { baseUrl: args[1].replace(/\/$/, ""), sessionId };
  }
  const port = flag(args, "--port");
  if (!port || !/^\d+$/.test(port) || port === "0") return undefined;
  const host = flag(args, "--hostname") ?? "127.0.0.1";
  if (!["127.0.0.1", "localhost", "::1"].includes(host)) return undefined;
  return { baseUrl: `http://${host.includes(":") ? `[${host}]` : host}:${port}`, sessionId };
}

export async function discoverOpenCode(pane: PaneInfo, processes: PaneProcessInfo): Promise<SeatRecord | undefined> {
  for (const p of processes.foregroundProcesses) {
    const target = openCodeTarget(p.argv);
    if (!target) continue;
    return {
      name: `opencode-${pane.paneId.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^-+/, "")}`,
      kind: SeatKind.OpenCode,
      title: pane.title,
      // The process and the session together are the occupant: either changing means someone else.
      occupantId: `opencode:${p.pid}:${target.sessionId}`,
      createdAtMs: Date.now(),
      control: { ...target },
    };
  }
  return undefined;
}
