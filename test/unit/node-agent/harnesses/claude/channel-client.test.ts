/**
 * The agent's channel client against small socket servers standing in for a channel that
 * misbehaves: an ack only counts when it is exact and authenticated; a channel dying mid-push
 * is unconfirmed; an unreachable one is a definite not-sent.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pushChannelEvent } from "../../../../../node-agent/harnesses/claude/channel-client.js";
import { ackMac } from "../../../../../node-agent/harnesses/claude/channel-wire.js";

const dir = mkdtempSync(join(tmpdir(), "clankie-chan-"));
const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.close();
  rmSync(dir, { recursive: true, force: true });
});
const TOKEN = "t".repeat(64);
const EVENT = "7335fe0e-a46e-4d52-994d-71de1cac2a35";

async function channel(name: string, onPush: (socket: Socket, push: { eventId: string }) => void) {
  const socketPath = join(dir, `${name}.sock`);
  const tokenFile = join(dir, `${name}.token`);
  writeFileSync(tokenFile, TOKEN);
  const server = createServer((s) => {
    let buf = "";
    s.setEncoding("utf8");
    s.on("data", (c: string) => {
      buf += c;
      let at: number;
      while ((at = buf.indexOf("\n")) >= 0) {
        const m = JSON.parse(buf.slice(0, at));
        buf = buf.slice(at + 1);
        if (m.op === "hello")
          s.write(JSON.stringify({ op: "hello", ok: m.token === TOKEN, claudePid: 1, mcpReady: true }) + "\n");
        if (m.op === "push") onPush(s, m);
      }
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(socketPath, () => r()));
  return { socketPath, tokenFile };
}

describe("claude-channel-client.pushChannelEvent", () => {
  it("an exact, authenticated ack of our event id is transport delivery", async () => {
    const a = await channel("good", (s, p) =>
      s.write(
        JSON.stringify({ op: "ack", eventId: p.eventId, acknowledged: true, mac: ackMac(TOKEN, p.eventId) }) + "\n",
      ),
    );
    expect(await pushChannelEvent(a, 2000, EVENT, "hi", {})).toEqual({ kind: "acked", replayed: false });
  });

  it("an ack of another event id, or without the right authentication, is not an ack", async () => {
    const other = await channel("other", (s) =>
      s.write(
        JSON.stringify({
          op: "ack",
          eventId: "00000000-0000-4000-8000-000000000000",
          acknowledged: true,
          mac: ackMac(TOKEN, "00000000-0000-4000-8000-000000000000"),
        }) + "\n",
      ),
    );
    expect((await pushChannelEvent(other, 2000, EVENT, "hi", {})).kind).toBe("lost");
    const forged = await channel("forged", (s, p) =>
      s.write(
        JSON.stringify({ op: "ack", eventId: p.eventId, acknowledged: true, mac: ackMac("wrong", p.eventId) }) + "\n",
      ),
    );
    expect((await pushChannelEvent(forged, 2000, EVENT, "hi", {})).kind).toBe("lost");
  });

  it("a channel that dies mid-push is unconfirmed (lost), never not-sent", async () => {
    const dying = await channel("dying", (s) => s.destroy());
    expect((await pushChannelEvent(dying, 2000, EVENT, "hi", {})).kind).toBe("lost");
  });

  it("an unreachable channel is a definite not-sent", async () => {
    const tokenFile = join(dir, "none.token");
    writeFileSync(tokenFile, TOKEN);
    expect(
      (await pushChannelEvent({ socketPath: join(dir, "none.sock"), tokenFile }, 2000, EVENT, "hi", {})).kind,
    ).toBe("not_sent");
  });
});
