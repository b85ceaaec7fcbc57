/**
 * The agent's end of the gateway tunnel (ADR 0042, controller/fleet/gateway-tunnel.ts): each
 * replica it holds a reverse link to opens one stream on it, and the agent's gateway calls to
 * that replica go into the stream instead of over a second TLS session. Without a tunnel (the
 * link is down, not yet up, or the controller predates it) a call goes over `h2` as before,
 * whose session closes once idle, so a linked agent keeps one socket per replica.
 *
 * A tunnel that closes fails its calls in flight as unavailable, as a dropped `h2` session does:
 * the caller sends them to the next replica (controller-link.ts; every gateway call is idempotent).
 */
import type { Http2ServerRequest, Http2ServerResponse, ServerHttp2Session } from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type Transport, type UnaryResponse } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import {
  TunnelAnswerSchema,
  TunnelCallSchema,
  type TunnelAnswer,
} from "../../shared/gen/clankie/fleet/v1/tunnel_pb.js";
import {
  FrameReader,
  frame,
  GATEWAY_TUNNEL_CONTENT_TYPE,
  GATEWAY_TUNNEL_PATH,
} from "../../shared/rpc/tunnel-frames.js";

/** An answer's bound: the controller's answers are small (a seat report's is empty). */
const ANSWER_MAX_BYTES = 4 * 1024 * 1024;

interface Pending {
  resolve: (a: TunnelAnswer) => void;
  reject: (e: ConnectError) => void;
  timer: NodeJS.Timeout | undefined;
}

export class GatewayTunnel {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private open = true;

  constructor(
    req: Http2ServerRequest,
    private readonly res: Http2ServerResponse,
    onClose: () => void,
  ) {
    res.writeHead(200, { "content-type": GATEWAY_TUNNEL_CONTENT_TYPE });
    const reader = new FrameReader(ANSWER_MAX_BYTES);
    const end = () => {
      if (!this.open) return;
      this.open = false;
      onClose();
      for (const p of this.pending.values()) {
        clearTimeout(p.timer);
        p.reject(new ConnectError("the reverse link closed; the call's outcome is unknown", Code.Unavailable));
      }
      this.pending.clear();
    };
    req.on("data", (chunk: Buffer) => {
      try {
        for (const m of reader.push(chunk)) {
          const answer = fromBinary(TunnelAnswerSchema, m);
          const p = this.pending.get(answer.id);
          if (!p) continue; // Its caller gave up (deadline) already.
          this.pending.delete(answer.id);
          clearTimeout(p.timer);
          p.resolve(answer);
        }
      } catch {
        res.stream.destroy();
        end();
      }
    });
    req.on("error", end);
    res.on("error", end);
    req.once("close", end);
    res.once("close", end);
  }

  get isOpen(): boolean {
    return this.open && !this.res.stream.destroyed;
  }

  call(method: string, request: Uint8Array, timeoutMs: number | undefined): Promise<TunnelAnswer> {
    if (!this.isOpen) return Promise.reject(new ConnectError("the gateway tunnel is closed", Code.Unavailable));
    const id = this.nextId;
    this.nextId = (this.nextId % 0xffff_fff0) + 1;
    return new Promise<TunnelAnswer>((resolve, reject) => {
      const timer =
        timeoutMs && timeoutMs > 0
          ? setTimeout(() => {
              this.pending.delete(id);
              reject(new ConnectError("the operation timed out", Code.DeadlineExceeded));
            }, timeoutMs)
          : undefined;
      this.pending.set(id, { resolve, reject, timer });
      const call = create(TunnelCallSchema, { id, method, request, timeoutMs: timeoutMs ?? 0 });
      this.res.write(frame(toBinary(TunnelCallSchema, call)));
    });
  }
}

/** The open tunnels, by the replica URL whose reverse link carries them. */
export class GatewayTunnels {
  private readonly byUrl = new Map<string, GatewayTunnel>();

  /** `urlOf` names the replica a reverse-link session was dialed to (reverse-dialer.ts). */
  constructor(private readonly urlOf: (session: ServerHttp2Session) => string | undefined) {}

  /** Takes the controller's tunnel request; false for any other request. */
  accept(req: Http2ServerRequest, res: Http2ServerResponse): boolean {
    if (req.url !== GATEWAY_TUNNEL_PATH || req.method !== "POST") return false;
    const url = this.urlOf(req.stream.session as ServerHttp2Session);
    if (!url) {
      res.writeHead(404);
      res.end();
      return true;
    }
    const tunnel: GatewayTunnel = new GatewayTunnel(req, res, () => {
      if (this.byUrl.get(url) === tunnel) this.byUrl.delete(url);
    });
    this.byUrl.set(url, tunnel);
    return true;
  }

  get(url: string): GatewayTunnel | undefined {
    const t = this.byUrl.get(url);
    return t?.isOpen ? t : undefined;
  }

  /** A transport for one replica: unary calls through its tunnel while one is open, else `direct`. */
  transport(url: string, direct: Transport): Transport {
    return {
      unary: async (method, signal, timeoutMs, header, input, contextValues) => {
        const tunnel = this.get(url);
        if (!tunnel) return direct.unary(method, signal, timeoutMs, header, input, contextValues);
        signal?.throwIfAborted();
        const answer = await tunnel.call(method.name, toBinary(method.input, create(method.input, input)), timeoutMs);
        const trailer = new Headers(answer.trailer);
        const error = findTrailerError(trailer);
        if (error) throw error;
        return {
          stream: false,
          service: method.parent,
          method,
          header: new Headers(),
          message: fromBinary(method.output, answer.response),
          trailer,
        } as UnaryResponse<never, never>;
      },
      stream: (...args) => direct.stream(...args),
    };
  }
}
