/**
 * The worker side of the agent's worker endpoint (node-agent/worker-link/): one request per
 * connection, one JSON line each way. A connection that is refused (no agent listening, or no
 * socket at all) never carried the request, so it is reported apart from a lost answer.
 */
import { connect } from "node:net";
import { JsonlSplitter } from "../node-agent/harnesses/pi/link.js";

export type AgentAnswer =
  | { kind: "answer"; body: Record<string, unknown> }
  | { kind: "refused"; detail: string }
  | { kind: "lost"; detail: string };

const REQUEST_TIMEOUT_MS = 15_000;

export function askAgent(
  socketPath: string,
  request: Record<string, unknown>,
  timeoutMs = REQUEST_TIMEOUT_MS,
): Promise<AgentAnswer> {
  return new Promise((resolve) => {
    let connected = false;
    let done = false;
    const finish = (a: AgentAnswer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(a);
    };
    const socket = connect(socketPath);
    const timer = setTimeout(
      () => finish({ kind: "lost", detail: `no answer from the agent within ${timeoutMs / 1000} s` }),
      timeoutMs,
    );
    const splitter = new JsonlSplitter((line) => {
      try {
        finish({ kind: "answer", body: JSON.parse(line) as Record<string, unknown> });
      } catch {
        finish({ kind: "lost", detail: "the agent's answer was not JSON" });
      }
    });
    socket.setEncoding("utf8");
    socket.once("connect", () => {
      connected = true;
      socket.write(JSON.stringify(request) + "\n");
    });
    socket.on("data", (d: string) => splitter.push(d));
    socket.once("error", (e: NodeJS.ErrnoException) => {
      if (!connected && (e.code === "ECONNREFUSED" || e.code === "ENOENT"))
        finish({ kind: "refused", detail: `${e.code}: no agent is listening at ${socketPath}` });
      else finish({ kind: "lost", detail: `the connection to the agent failed: ${e.message}` });
    });
    socket.once("close", () => finish({ kind: "lost", detail: "the agent closed the connection without answering" }));
  });
}
