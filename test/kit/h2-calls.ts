/**
 * A raw HTTP/2 (h2c) client for the front-door suites: a session bound to a chosen loopback
 * source address (the budgets and holds are per address), and one gRPC call with an empty
 * request message, told apart as answered, refused RESOURCE_EXHAUSTED, or failed.
 */
import { connect as h2connect, type ClientHttp2Session } from "node:http2";
import { connect as netConnect } from "node:net";

const EMPTY_GRPC_MESSAGE = Buffer.from([0, 0, 0, 0, 0]);

export function h2(url: string, localAddress = "127.0.0.1"): Promise<ClientHttp2Session> {
  const u = new URL(url);
  const session = h2connect(url, {
    createConnection: () => netConnect({ host: u.hostname, port: Number(u.port), localAddress }),
  });
  return new Promise((resolve, reject) => {
    session.once("connect", () => resolve(session));
    session.once("error", reject);
  });
}

/** One gRPC call with an empty request message; "refused" when the answer is RESOURCE_EXHAUSTED. */
export function grpcCall(session: ClientHttp2Session, path: string): Promise<"answered" | "refused" | "failed"> {
  return new Promise((resolve) => {
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
    });
    stream.on("response", (headers) => {
      if (headers["grpc-status"] === "8") resolve("refused");
      else if (headers["grpc-status"] !== undefined && headers["grpc-status"] !== "0") resolve("failed");
    });
    stream.on("data", () => resolve("answered"));
    stream.on("error", () => resolve("failed"));
    stream.on("close", () => resolve("failed"));
    stream.end(EMPTY_GRPC_MESSAGE);
  });
}
