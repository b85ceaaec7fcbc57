/**
 * Our delivery id written into OpenCode's message id, and read back out, so a receipt is
 * matched by our id and never by text. v2 takes any "msg_" id; v1 sorts messages by id, so
 * its ids start with a time prefix (as OpenCode's own ascending ids do) before our id.
 */
const HEX32 = /^[0-9a-f]{32}$/;

function hexOf(deliveryId: string): string {
  const hex = deliveryId.replace(/-/g, "").toLowerCase();
  if (!HEX32.test(hex)) throw new Error(`delivery id ${JSON.stringify(deliveryId)} is not a UUID`);
  return hex;
}

export function v2MessageId(deliveryId: string): string {
  return `msg_${hexOf(deliveryId)}`;
}

export function v1MessageId(deliveryId: string, nowMs: number): string {
  // 12 hex digits of time, like OpenCode's Identifier.ascending, so ours sorts after older messages.
  const time = (BigInt(Math.floor(nowMs)) * 0x1000n).toString(16).padStart(12, "0").slice(-12);
  return `msg_${time}${hexOf(deliveryId)}`;
}

/** The delivery id inside one of our message ids, or undefined for anyone else's. */
export function deliveryIdOf(messageId: string): string | undefined {
  const m = /^msg_(?:[0-9a-f]{12})?([0-9a-f]{32})$/.exec(messageId);
  if (!m) return undefined;
  const h = m[1]!;
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
