/**
 * The agent's gateway calls on its reverse link (ADR 0042, issue 36): on every link this replica
 * opens one HTTP/2 stream to the agent, and serves the AgentGatewayService calls the agent writes
 * into it. An agent then holds one TLS session to each replica, not two: the second, the
 * agent-dialed `h2` socket, was a third of the controller's memory per linked machine.
 *
 * The caller is the link's client certificate, checked when the link was accepted and cut with
 * it on revocation: a call names its machine and is refused for another one, as on `h2`. The
 * service implementation and its interceptors are the gateway's own; the answer carries the gRPC
 * status trailers, so an agent reads a refusal exactly as from a direct call. An agent that does
 * not know the tunnel answers its request like any unknown path, and the stream just ends.
 */
import type { ClientHttp2Session } from "node:http2";
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type DescMethodUnary,
  type DescService,
  type MessageShape,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  createHandlerContext,
  createMethodImplSpec,
  type Interceptor,
  type ServiceImpl,
} from "@connectrpc/connect";
import { invokeUnaryImplementation } from "@connectrpc/connect/protocol";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { TunnelAnswerSchema, TunnelCallSchema } from "../../shared/gen/clankie/fleet/v1/tunnel_pb.js";
import {
  FrameReader,
  frame,
  GATEWAY_TUNNEL_CONTENT_TYPE,
  GATEWAY_TUNNEL_PATH,
} from "../../shared/rpc/tunnel-frames.js";
import type { Logger } from "../../shared/logger.js";
import { peerIdentityKey, type PeerIdentity } from "./peer-identity.js";

type Spec = ReturnType<typeof createMethodImplSpec>;

export type GatewayTunnelServer = (session: ClientHttp2Session, peer: PeerIdentity) => void;

export function gatewayTunnelServer<S extends DescService>(o: {
  service: S;
  impl: ServiceImpl<S>;
  interceptors: Interceptor[];
  readMaxBytes: number;
  logger: Logger;
}): GatewayTunnelServer {
  const methods = new Map<string, { method: DescMethodUnary; spec: Spec }>();
  for (const method of o.service.methods) {
    const fn = (o.impl as Record<string, unknown>)[method.localName];
    if (method.methodKind !== "unary" || typeof fn !== "function") continue;
    const impl = (fn as (...a: unknown[]) => unknown).bind(o.impl) as never;
    methods.set(method.name, { method: method as DescMethodUnary, spec: createMethodImplSpec(method, impl) });
  }

  return (session, peer) => {
    if (session.destroyed || session.closed) return;
    let stream: ReturnType<ClientHttp2Session["request"]>;
    try {
      stream = session.request(
        { ":method": "POST", ":path": GATEWAY_TUNNEL_PATH, "content-type": GATEWAY_TUNNEL_CONTENT_TYPE },
        { endStream: false },
      );
    } catch {
      return; // The link is closing: the agent calls directly meanwhile.
    }
    const closed = new AbortController();
    const values = createContextValues().set(peerIdentityKey, peer);
    const reader = new FrameReader(o.readMaxBytes);
    stream.on("error", () => {});
    stream.once("close", () => closed.abort(new ConnectError("the link closed", Code.Canceled)));

    const serve = async (bytes: Uint8Array): Promise<void> => {
      const call = fromBinary(TunnelCallSchema, bytes);
      const entry = methods.get(call.method);
      const trailer = new Headers({ "grpc-status": "0" });
      let response: Uint8Array | undefined;
      const ctx = createHandlerContext({
        service: o.service,
        method: entry?.method ?? o.service.methods[0]!,
        protocolName: "grpc",
        requestMethod: "POST",
        url: `tunnel://${peer.machine}/${o.service.typeName}/${call.method}`,
        timeoutMs: call.timeoutMs || undefined,
        requestSignal: closed.signal,
        contextValues: values,
        responseTrailer: trailer,
      });
      try {
        if (!entry) throw new ConnectError(`no method ${call.method} on the gateway tunnel`, Code.Unimplemented);
        const input = fromBinary(entry.method.input, call.request);
        const output = await invokeUnaryImplementation(entry.spec as never, ctx, input, o.interceptors);
        response = toBinary(entry.method.output, output as MessageShape<DescMessage>);
      } catch (e) {
        setTrailerStatus(trailer, ConnectError.from(e));
      } finally {
        ctx.abort();
      }
      if (stream.destroyed || !stream.writable) return;
      const answer = create(TunnelAnswerSchema, { id: call.id, trailer: Object.fromEntries(trailer) });
      if (response) answer.response = response;
      stream.write(frame(toBinary(TunnelAnswerSchema, answer)));
    };

    stream.on("data", (chunk: Buffer) => {
      let messages: Buffer[];
      try {
        messages = reader.push(chunk);
      } catch (e) {
        o.logger.warn("gateway tunnel closed: bad frame", { machine: peer.machine, error: (e as Error).message });
        stream.destroy();
        return;
      }
      for (const m of messages)
        serve(m).catch((e: Error) => {
          // Not a protobuf TunnelCall: the tunnel cannot say which call failed, so it ends.
          o.logger.warn("gateway tunnel closed: bad call", { machine: peer.machine, error: e.message });
          stream.destroy();
        });
    });
  };
}
