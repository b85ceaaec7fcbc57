/**
 * The gateway tunnel's framing (proto/clankie/fleet/v1/tunnel.proto, ADR 0042): each message in
 * a gRPC-style envelope, a flag byte (0) and a 4-byte big-endian length, on one HTTP/2 stream.
 */
export const GATEWAY_TUNNEL_PATH = "/clankie.fleet.v1.GatewayTunnel/Open";
export const GATEWAY_TUNNEL_CONTENT_TYPE = "application/x-clankie-tunnel";

export function frame(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + bytes.length);
  out[0] = 0;
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}

/** Splits a stream's chunks into whole messages; a message past `maxBytes` or flagged is an error. */
export class FrameReader {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): Buffer[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const out: Buffer[] = [];
    while (this.pending.length >= 5) {
      if (this.pending[0] !== 0) throw new Error("tunnel frame with an unknown flag");
      const n = this.pending.readUInt32BE(1);
      if (n > this.maxBytes) throw new Error(`tunnel frame of ${n} bytes is larger than ${this.maxBytes}`);
      if (this.pending.length < 5 + n) break;
      out.push(this.pending.subarray(5, 5 + n));
      this.pending = this.pending.subarray(5 + n);
    }
    // Nothing kept alive by a consumed chunk's slice once the stream is idle.
    if (this.pending.length === 0) this.pending = Buffer.alloc(0);
    return out;
  }
}
