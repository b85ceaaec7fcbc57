/**
 * The 8 bytes of a reverse link's PING (ADR 0042): the controller's liveness PING carries the round
 * trip it measured on that link's previous one, so the agent's transit bound needs no PING stream of
 * its own (node-agent/service/link-round-trips.ts). A tag first, then microseconds: a PING from
 * anything else (Node's default payload is a timestamp) reads as no round trip.
 */

const TAG = 0x636c_6b72; // "clkr"
/** Round trips past this (71 min) are not sent: the link was cut long before. */
const MAX_US = 0xffff_ffff;

export function roundTripPayload(ms: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32BE(TAG, 0);
  b.writeUInt32BE(Math.min(MAX_US, Math.max(0, Math.round(ms * 1000))), 4);
  return b;
}

/** The round trip (ms) a PING's payload reports, or undefined when it is not one of ours. */
export function roundTripOf(payload: Buffer | undefined): number | undefined {
  if (payload?.length !== 8 || payload.readUInt32BE(0) !== TAG) return undefined;
  return payload.readUInt32BE(4) / 1000;
}
