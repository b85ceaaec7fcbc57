/**
 * A unix-socket relay in front of a real Pi TUI's Clankie extension socket that loses Pi's
 * answer to a prompt on purpose (rule 42's lost-answer case). The relay opens in the node
 * agent's Pi socket folder under the Pi's own pid, with the extension's token beside it, so
 * the agent discovers the pane's Pi through it. For a prompt whose text contains a marker:
 * `answer` forwards the prompt (Pi really takes it) and swallows only Pi's response, as a link
 * cut after the write would; `prompt` swallows the prompt itself, so Pi never sees it and the
 * agent still hears nothing. Every other line passes through unchanged, both ways.
 */
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { JsonlSplitter } from "../../../node-agent/harnesses/pi/link.js";

export interface PiLossyProxy {
  /** Drop what `how` says for the next prompt whose message contains `marker`. */
  arm(marker: string, how: "answer" | "prompt"): void;
  /** Prompt texts that reached Pi through the relay. */
  readonly forwardedPrompts: string[];
  close(): Promise<void>;
}

export async function startPiLossyProxy(o: {
  piSocketDir: string;
  agentSocketDir: string;
  piPid: number;
}): Promise<PiLossyProxy> {
  const upstreamPath = join(o.piSocketDir, `pi-${o.piPid}.sock`);
  const socketPath = join(o.agentSocketDir, `pi-${o.piPid}.sock`);
  mkdirSync(o.agentSocketDir, { recursive: true, mode: 0o700 });
  copyFileSync(join(o.piSocketDir, `pi-${o.piPid}.token`), join(o.agentSocketDir, `pi-${o.piPid}.token`));
  const armed: { marker: string; how: "answer" | "prompt" }[] = [];
  const forwardedPrompts: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(upstreamPath);
    sockets.add(client).add(upstream);
    const swallowAnswerFor = new Set<string>();
    client.setEncoding("utf8");
    upstream.setEncoding("utf8");
    const fromAgent = new JsonlSplitter((line) => {
      let cmd: { type?: string; id?: string; message?: string } = {};
      try {
        cmd = JSON.parse(line);
      } catch {
        // passes through as is
      }
      if (cmd.type === "prompt" && typeof cmd.message === "string") {
        const at = armed.findIndex((a) => cmd.message!.includes(a.marker));
        const trap = at >= 0 ? armed.splice(at, 1)[0] : undefined;
        if (trap?.how === "prompt") return;
        if (trap?.how === "answer" && cmd.id) swallowAnswerFor.add(cmd.id);
        forwardedPrompts.push(cmd.message);
      }
      upstream.write(line + "\n");
    });
    const fromPi = new JsonlSplitter((line) => {
      try {
        const r = JSON.parse(line) as { type?: string; id?: string };
        if (r.type === "response" && r.id && swallowAnswerFor.delete(r.id)) return;
      } catch {
        // passes through as is
      }
      client.write(line + "\n");
    });
    client.on("data", (d: string) => fromAgent.push(d));
    upstream.on("data", (d: string) => fromPi.push(d));
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  rmSync(socketPath, { force: true });
  await new Promise<void>((resolve) => server.listen(socketPath, () => resolve()));
  return {
    arm: (marker, how) => void armed.push({ marker, how }),
    forwardedPrompts,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(socketPath, { force: true });
    },
  };
}
