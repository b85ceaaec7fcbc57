/**
 * Which pane host `clankie up` gives its local agent when the user did not choose one
 * (`--pane-host auto`): Herdr when its socket exists, else tmux when a tmux server answers on
 * the chosen (or default) socket, else none. Asking tmux `list-sessions` never starts a server.
 */
import { execFile } from "node:child_process";
import { statSync } from "node:fs";
import { defaultHerdrSocket } from "../node-agent/for-cli.js";

export type PaneHostChoice = "herdr" | "tmux" | "none";

export interface Discovered {
  paneHost: PaneHostChoice;
  /** Why, in words for the user. */
  reason: string;
}

function isSocket(path: string): boolean {
  try {
    return statSync(path).isSocket();
  } catch {
    return false;
  }
}

function tmuxAnswers(tmuxSocket: string | undefined, env: NodeJS.ProcessEnv): Promise<boolean> {
  return new Promise((resolve) => {
    execFile("tmux", [...(tmuxSocket ? ["-S", tmuxSocket] : []), "list-sessions"], { env, timeout: 3000 }, (error) =>
      resolve(!error),
    );
  });
}

export async function discoverPaneHost(o: {
  herdrSocket?: string | undefined;
  tmuxSocket?: string | undefined;
  env: NodeJS.ProcessEnv;
}): Promise<Discovered> {
  const herdr = o.herdrSocket ?? defaultHerdrSocket(o.env).socketPath;
  if (isSocket(herdr)) return { paneHost: "herdr", reason: `Herdr's socket exists at ${herdr}` };
  if (await tmuxAnswers(o.tmuxSocket, o.env))
    return { paneHost: "tmux", reason: `a tmux server answers${o.tmuxSocket ? ` on ${o.tmuxSocket}` : ""}` };
  return {
    paneHost: "none",
    reason: "no Herdr socket and no tmux server: only mailbox seats until one runs (or pass --pane-host)",
  };
}
