/**
 * Opens a loopback TCP connection to a proof-test backend and resolves only once the backend
 * has accepted it (it greets every accepted socket with one byte). Until accept() the server's
 * end sits in the listen queue owned by no process, so a peer proof taken right after the
 * client's connect callback would race the backend — a real harness connection (a completed
 * WebSocket handshake) is always accepted before we prove it.
 */
import { connect, type Socket } from "node:net";
import type { TcpTuple } from "../../node-agent/proofs/provider.js";

export async function connectAccepted(port: number, keep: Socket[]): Promise<{ socket: Socket; tuple: TcpTuple }> {
  const socket = await new Promise<Socket>((resolve, reject) => {
    const s = connect(port, "127.0.0.1").once("error", reject);
    s.once("data", () => resolve(s));
  });
  keep.push(socket);
  return {
    socket,
    tuple: {
      localAddress: socket.localAddress!,
      localPort: socket.localPort!,
      remoteAddress: socket.remoteAddress!,
      remotePort: socket.remotePort!,
    },
  };
}
