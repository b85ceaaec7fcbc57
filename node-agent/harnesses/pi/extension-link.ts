/**
 * Dialling the Clankie Pi extension's socket (a Pi TUI in a pane): prove the token, then the
 * connection is an ordinary Pi link speaking the RPC commands. Also recognises such a Pi in a
 * pane: a foreground `pi` whose extension socket exists in this agent's socket directory.
 */
import { existsSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { randomUUID } from "node:crypto";
import { SeatKind } from "../../../shared/verdicts.js";
import type { PaneInfo, PaneProcessInfo } from "../../panes/pane-host.js";
import type { SeatRecord } from "../adapter.js";
import { StreamPiLink, type PiLink } from "./link.js";
import type { PiExtensionControl } from "./links.js";

export async function dialPiExtension(control: PiExtensionControl, timeoutMs = 5000): Promise<PiLink> {
  const token = readFileSync(control.tokenFile, "utf8").trim();
  const socket = connect(control.socketPath);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  const link = new StreamPiLink(socket, socket, async () => {
    socket.destroy();
  });
  const hello = await link.request({ type: "hello", token }, `hello-${randomUUID()}`, timeoutMs);
  if (hello.kind !== "ok") {
    await link.close();
    throw new Error(`the Pi extension refused us: ${JSON.stringify(hello)}`);
  }
  const d = hello.data as { pid?: unknown; commands?: unknown; deliverAs?: unknown };
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
  // An extension that does not say which process serves it proves nothing: the link stays unproven (headless).
  if (typeof d.pid === "number" && Number.isInteger(d.pid) && d.pid > 0)
    link.origin = { kind: "extension", pid: d.pid, commands: strings(d.commands), deliverAs: strings(d.deliverAs) };
  return link;
}

export function createPiDiscover(socketDir: string) {
  return async (pane: PaneInfo, processes: PaneProcessInfo): Promise<SeatRecord | undefined> => {
    for (const p of processes.foregroundProcesses) {
      if (!p.argv.slice(0, 2).some((a) => /(^|\/)pi$/.test(a))) continue;
      const socketPath = `${socketDir}/pi-${p.pid}.sock`;
      if (!existsSync(socketPath)) continue;
      const control: PiExtensionControl = {
        transport: "extension",
        socketPath,
        tokenFile: `${socketDir}/pi-${p.pid}.token`,
        piPid: p.pid,
      };
      return {
        name: `pi-${pane.paneId.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^-+/, "")}`,
        kind: SeatKind.Pi,
        title: pane.title,
        occupantId: `pi:${p.pid}`,
        createdAtMs: Date.now(),
        control: { ...control },
      };
    }
    return undefined;
  };
}
