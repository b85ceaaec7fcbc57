/**
 * The names both ends of a Claude channel agree on: the MCP server's name in Claude's config,
 * where one Claude process's socket and token live, and the ack's HMAC. The channel server
 * (worker/claude-channel.ts) runs inside the seat's session and the agent's client
 * (claude-channel-client.ts) in the node agent; this file is all they share, so the agent
 * does not load the MCP SDK's server to learn a name (the idle agent's memory).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { join } from "node:path";

export const CHANNEL_SERVER_NAME = "clankie-seat";

export interface ChannelAddress {
  socketPath: string;
  tokenFile: string;
}

/** Where the channel for one Claude process listens, by that process's pid. */
export function channelPaths(dir: string, claudePid: number): ChannelAddress {
  return { socketPath: join(dir, `claude-${claudePid}.sock`), tokenFile: join(dir, `claude-${claudePid}.token`) };
}

/** The ack's proof that it answers this exact event and knows the channel's token. */
export function ackMac(token: string, eventId: string): string {
  return createHmac("sha256", token).update(`ack:${eventId}`).digest("hex");
}

export function ackMacMatches(token: string, eventId: string, mac: unknown): boolean {
  const want = Buffer.from(ackMac(token, eventId));
  const got = Buffer.from(String(mac ?? ""));
  return want.length === got.length && timingSafeEqual(want, got);
}
