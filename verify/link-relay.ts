/**
 * The partition point of the verification run: the agent link's only path. The controller
 * advertises its agent port as 127.0.0.2:<port> (`--agent-advertise 127.0.0.2`), where this
 * relay listens and forwards to the real listener on 127.0.0.1:<port>. Both the agent's gateway
 * calls and its reverse link (which carries every controller-to-agent call) dial the advertised
 * URL, so `down()` cuts the whole link both ways: open connections are destroyed and new ones
 * refused until `up()`. It counts what it carried so the report can show the link went through it.
 * The relay runs in a process of its own (link-relay-process.ts); each command resolves once done.
 */
import { fork } from "node:child_process";
import type { RelayAnswer, RelayCommand, RelayStats } from "./link-relay-process.js";

export interface LinkRelay {
  readonly host: string;
  readonly port: number;
  down(): Promise<void>;
  up(): Promise<void>;
  /** Connections relayed, and connections refused or cut by a partition. */
  stats(): Promise<RelayStats>;
  close(): Promise<void>;
}

export async function startLinkRelay(listenHost: string, port: number, targetHost: string): Promise<LinkRelay> {
  const child = fork(new URL("./link-relay-process.js", import.meta.url), [listenHost, String(port), targetHost], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const pending = new Map<number, (s: RelayStats) => void>();
  let next = 0;
  let exited = false;
  await new Promise<void>((resolve, reject) => {
    child.on("message", (a: RelayAnswer) => {
      if ("ready" in a) resolve();
      else if ("failed" in a) reject(new Error(`link relay on ${listenHost}:${port}: ${a.failed}`));
      else {
        pending.get(a.id)?.(a.stats);
        pending.delete(a.id);
      }
    });
    child.once("exit", (code) => {
      exited = true;
      reject(new Error(`link relay on ${listenHost}:${port} exited (${code})`));
      for (const done of pending.values()) done({ relayed: 0, refused: 0, cut: 0 });
      pending.clear();
    });
  });
  const ask = (op: RelayCommand["op"]) =>
    new Promise<RelayStats>((resolve, reject) => {
      if (exited) return reject(new Error(`link relay on ${listenHost}:${port} is gone`));
      const id = next++;
      pending.set(id, resolve);
      child.send({ id, op } satisfies RelayCommand);
    });
  return {
    host: listenHost,
    port,
    down: async () => void (await ask("down")),
    up: async () => void (await ask("up")),
    stats: () => ask("stats"),
    async close() {
      if (!exited) await ask("close");
    },
  };
}
