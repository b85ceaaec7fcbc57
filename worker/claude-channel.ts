/**
 * The Claude Code channel: a stdio MCP server that Claude spawns in the seat's session
 * (declaring experimental["claude/channel"]), fed by the node agent over a local unix socket.
 * The socket lives in a 0700 directory with a 0600 token beside it; every client proves the
 * token first, and every ack carries an HMAC of the exact event id, so the agent can tell a
 * genuine ack of its event from anything else. An ack means "handed to Claude" (transport),
 * never "read by the model". Each pushed event's meta carries our message id.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { JsonlSplitter } from "../node-agent/harnesses/pi/link.js";
import { ackMac, CHANNEL_SERVER_NAME, channelPaths } from "../node-agent/harnesses/claude/channel-wire.js";

export interface ChannelServer {
  readonly socketPath: string;
  close(): Promise<void>;
}

export async function serveClaudeChannel(dir: string, claudePid = process.ppid): Promise<ChannelServer> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const { socketPath, tokenFile } = channelPaths(dir, claudePid);
  const token = randomBytes(32).toString("hex");
  const pushed = new Set<string>();
  let mcpReady = false;

  const mcp = new Server(
    { name: CHANNEL_SERVER_NAME, version: "0.1.0" },
    {
      capabilities: { experimental: { "claude/channel": {} } },
      instructions:
        'Messages from your lead arrive as <channel source="clankie-seat"> events. Treat each as a new instruction from the lead.',
    },
  );
  mcp.oninitialized = () => (mcpReady = true);
  await mcp.connect(new StdioServerTransport());

  const serve = (socket: Socket) => {
    let authed = false;
    const reply = (o: unknown) => socket.write(JSON.stringify(o) + "\n");
    const splitter = new JsonlSplitter((line) => {
      let msg: { op?: string; token?: string; eventId?: string; content?: string; meta?: Record<string, string> };
      try {
        msg = JSON.parse(line);
      } catch {
        socket.destroy();
        return;
      }
      if (!authed) {
        const given = Buffer.from(String(msg.token ?? ""));
        const want = Buffer.from(token);
        if (msg.op !== "hello" || given.length !== want.length || !timingSafeEqual(given, want)) {
          socket.destroy();
          return;
        }
        authed = true;
        reply({ op: "hello", ok: true, claudePid, mcpReady });
        return;
      }
      if (msg.op === "status") {
        reply({ op: "status", mcpReady, pushed: [...pushed] });
        return;
      }
      if (msg.op === "push" && typeof msg.eventId === "string" && typeof msg.content === "string") {
        const eventId = msg.eventId;
        if (pushed.has(eventId)) {
          // Idempotent on our id: a repeated push is acknowledged, never shown twice.
          reply({ op: "ack", eventId, acknowledged: true, replayed: true, mac: ackMac(token, eventId) });
          return;
        }
        if (!mcpReady) {
          reply({ op: "nack", eventId, reason: "claude_not_connected" });
          return;
        }
        pushed.add(eventId);
        const meta = { ...(msg.meta ?? {}), clankie_id: eventId };
        mcp
          .notification({ method: "notifications/claude/channel", params: { content: msg.content, meta } } as never)
          .then(
            () => reply({ op: "ack", eventId, acknowledged: true, mac: ackMac(token, eventId) }),
            (e: Error) =>
              reply({ op: "nack", eventId, reason: "stdio_write_failed", detail: e.message, mayHaveSent: true }),
          );
        return;
      }
      reply({ op: "error", reason: "unknown_op" });
    });
    socket.setEncoding("utf8");
    socket.on("data", (c: string) => splitter.push(c));
    socket.on("error", () => socket.destroy());
  };

  rmSync(socketPath, { force: true });
  const net: NetServer = createServer(serve);
  await new Promise<void>((resolve, reject) => {
    net.once("error", reject);
    net.listen(socketPath, () => resolve());
  });
  chmodSync(socketPath, 0o600);
  writeFileSync(tokenFile, token, { mode: 0o600 });

  const close = async () => {
    await new Promise<void>((resolve) => net.close(() => resolve()));
    rmSync(socketPath, { force: true });
    rmSync(tokenFile, { force: true });
    await mcp.close();
  };
  // Claude closing our stdin ends the session: take the socket and token with us.
  process.stdin.once("end", () => void close().finally(() => process.exit(0)));
  return { socketPath, close };
}
