/**
 * Garbage on the wire gets a typed gRPC error and changes nothing: bytes that are not the
 * request's protobuf, a frame that lies about its length, and a truncated frame, sent with
 * valid credentials over raw HTTP/2 to the controller's owner service, to its gateway (mutual
 * TLS with the agent's own certificate) and to the node agent's Deliver (on a reverse link the
 * agent dialed to a test replica). Afterwards both still serve, and no seat, receipt or
 * mailbox entry appeared.
 */
import { connect, constants, type ClientHttp2Session, type SecureClientSessionOptions } from "node:http2";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { machines } from "../../controller/db/schema.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { ownerOf } from "../kit/owner.js";
import { startReversePeer, type ReversePeer } from "../kit/reverse-peer.js";

/** One gRPC call with a hand-made body; the answer's grpc-status and message. */
async function rawCall(
  target: string | ClientHttp2Session,
  path: string,
  token: string,
  body: Buffer,
  tls?: SecureClientSessionOptions,
): Promise<{ status: number; message: string }> {
  const session: ClientHttp2Session = typeof target === "string" ? connect(target, tls ?? {}) : target;
  session.on("error", () => {});
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({
        [constants.HTTP2_HEADER_METHOD]: "POST",
        [constants.HTTP2_HEADER_PATH]: path,
        "content-type": "application/grpc+proto",
        te: "trailers",
        authorization: `Bearer ${token}`,
      });
      let headers: Record<string, unknown> = {};
      req.on("response", (h) => (headers = { ...h }));
      req.on("trailers", (t) => (headers = { ...headers, ...t }));
      req.on("data", () => {});
      req.on("error", reject);
      req.on("end", () =>
        resolve({
          status: Number(headers["grpc-status"]),
          message: decodeURIComponent(String(headers["grpc-message"] ?? "")),
        }),
      );
      req.end(body);
    });
  } finally {
    if (typeof target === "string") session.close();
  }
}

/** A gRPC length-prefixed frame: flag byte, 4-byte big-endian length, payload. */
const frame = (payload: Buffer, claimedLength = payload.length) =>
  Buffer.concat([
    Buffer.from([0]),
    Buffer.from([claimedLength >>> 24, (claimedLength >>> 16) & 255, (claimedLength >>> 8) & 255, claimedLength & 255]),
    payload,
  ]);
const GARBAGE = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x99, 0x01, 0x02]);
// connect-node types an undecodable message INTERNAL ("parse binary: …") and a broken envelope
// INVALID_ARGUMENT ("protocol error: …"); both name what was wrong, and neither reaches a handler.
const INVALID_ARGUMENT = 3;
const INTERNAL = 13;
const bodies: [string, Buffer, number, RegExp][] = [
  ["bytes that are not protobuf", frame(GARBAGE), INTERNAL, /^parse binary: /],
  [
    "a frame claiming more bytes than it has",
    frame(Buffer.from([0x0a, 0x03, 0x61]), 4096),
    INVALID_ARGUMENT,
    /^protocol error: /,
  ],
  ["a truncated frame header", Buffer.from([0, 0, 0]), INVALID_ARGUMENT, /^protocol error: /],
];

describe("garbage protobuf", () => {
  let fleet: TestFleet;
  let agentToken: string;
  let agentSession: ClientHttp2Session;
  let peer: ReversePeer;
  let mailbox: MailboxStore;

  beforeAll(async () => {
    fleet = await startFleet("pglite");
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("inbox");
    const [m] = await fleet.controller.database.db.select().from(machines);
    agentToken = m!.agentToken;
    mailbox = new MailboxStore(join(fleet.agentStateDir, "mailboxes"));
    // The agent learns of the test replica from its next heartbeat answer and dials it.
    peer = await startReversePeer(fleet.controller.database.db);
    agentSession = (await peer.nextLink()).session;
  });
  afterAll(async () => {
    await peer?.close();
    await fleet?.close();
  });

  it.each(bodies)(
    "the controller answers %s with a typed error and adds no seat",
    async (_what, body, code, message) => {
      const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
      const before = (await owner.seats()).length;
      const r = await rawCall(
        fleet.controller.url,
        "/clankie.fleet.v1.OwnerService/AddSeat",
        fleet.controller.ownerToken,
        body,
      );
      expect(r.status, r.message).toBe(code);
      expect(r.message).toMatch(message);
      const id = fleet.agent.identity.tls();
      const g = await rawCall(
        fleet.controller.agentUrl,
        "/clankie.fleet.v1.AgentGatewayService/ReportSeats",
        "",
        body,
        { ca: id.ca, cert: id.cert, key: id.key },
      );
      expect(g.status, g.message).toBe(code);
      expect(g.message).toMatch(message);
      expect((await owner.seats()).length).toBe(before);
    },
  );

  it.each(bodies)(
    "the agent answers %s to Deliver with a typed error and writes nothing",
    async (_what, body, code, message) => {
      const before = mailbox.list("inbox").entries.length;
      const r = await rawCall(agentSession, "/clankie.fleet.v1.AgentService/Deliver", agentToken, body);
      expect(r.status, r.message).toBe(code);
      expect(r.message).toMatch(message);
      expect(mailbox.list("inbox").entries.length).toBe(before);
    },
  );

  it("both still serve afterwards: a real delivery goes through once", async () => {
    const { connectLead } = await import("../kit/mcp-client.js");
    const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    try {
      const res = await lead.call("message_seat", { seat: "inbox", message: "after the garbage" });
      expect(res.structuredContent).toMatchObject({ outcome: "delivered" });
      expect(mailbox.list("inbox").entries.filter((e) => e.text === "after the garbage")).toHaveLength(1);
    } finally {
      await lead.close();
    }
  });
});
