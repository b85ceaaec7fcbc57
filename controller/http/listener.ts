/**
 * One port for everything the controller serves: the first bytes of each connection
 * decide. The HTTP/2 preface ("PRI * HTTP/2.0") goes to the h2c server (gRPC from agents,
 * grpcurl, grpc-js); anything else to HTTP/1.1 (MCP, Connect/JSON from browsers and
 * fetch, which never speak h2c).
 */
import { createServer as createHttp1Server, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import { createServer as createNetServer, type AddressInfo, type Socket } from "node:net";

export type Handler = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;

export interface Listener {
  readonly port: number;
  readonly host: string;
  close(): Promise<void>;
}

export async function listen(host: string, port: number, http1: (req: IncomingMessage, res: ServerResponse) => void, http2: Handler): Promise<Listener> {
  const h1 = createHttp1Server(http1);
  h1.keepAliveTimeout = 65_000;
  const h2 = createHttp2Server({}, http2 as (req: Http2ServerRequest, res: Http2ServerResponse) => void);
  const sockets = new Set<Socket>();
  const net = createNetServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.setNoDelay(true);
    socket.once("data", (chunk: Buffer) => {
      socket.pause();
      socket.unshift(chunk);
      if (chunk.subarray(0, 3).toString("latin1") === "PRI") {
        // http2 drains the bytes already buffered on the socket, then reads the handle itself.
        h2.emit("connection", socket);
      } else {
        h1.emit("connection", socket);
        socket.resume();
      }
    });
    socket.on("error", () => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    net.once("error", reject);
    net.listen(port, host, () => {
      net.off("error", reject);
      resolve();
    });
  });
  const address = net.address() as AddressInfo;
  return {
    port: address.port,
    host,
    close: () =>
      new Promise<void>((resolve) => {
        net.close(() => resolve());
        h1.closeAllConnections();
        for (const s of sockets) s.destroy();
      }),
  };
}
