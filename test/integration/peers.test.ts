/**
 * Peer messages between a fleet's workers, the controller's half on each driver (rule 49,
 * scenarios 23–24), through the real gateway, owner service and delivery pipeline, between two
 * real mailbox seats: off by default (typed refusal, nothing written), on by the owner's switch;
 * list_fleet_seats leaves the sender out; a send is delivered once through the ordinary
 * pipeline under the sender's own peer conversation; an unknown seat, a stale binding and text
 * over 32 KiB are refused with nothing written; reports never route to a peer.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import {
  BindWorkerRequestSchema,
  ListFleetSeatsRequestSchema,
  PeerMessageStatusRequestSchema,
  SendPeerMessageRequestSchema,
} from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { SetPeerMessagesRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { callReceipts, seats } from "../../controller/db/schema.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { acceptReports } from "../../controller/reports/worker-reports.js";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { ownerOf } from "../kit/owner.js";

describe.each(DRIVERS)("peer messages on %s", (driver) => {
  let fleet: TestFleet;
  let binding: string;
  const who = () => ({
    machine: fleet.agent.link.machine,
    instanceId: fleet.agent.link.instanceId,
    seatName: "sender",
  });
  const gw = () => fleet.agent.link.gateway;
  const owner = () => ownerOf(fleet.controller.url, fleet.controller.ownerToken);
  const peerbox = () => new MailboxStore(join(fleet.agentStateDir, "mailboxes")).list("peerbox").entries;
  const send = (text: string, recipient = "peerbox", id = randomUUID(), b = binding) =>
    gw().sendPeerMessage(
      create(SendPeerMessageRequestSchema, { ...who(), binding: b, recipientSeat: recipient, id, text }),
    );
  const receiptsUnder = async (conversationId: string) =>
    (
      await fleet.controller.database.db
        .select()
        .from(callReceipts)
        .where(eq(callReceipts.conversationId, conversationId))
    ).length;

  beforeAll(async () => {
    fleet = await startFleet(driver);
    await owner().addMailbox("sender");
    await owner().addMailbox("peerbox");
    const [row] = await fleet.controller.database.db
      .select({ occupantId: seats.occupantId })
      .from(seats)
      .where(eq(seats.id, "testbox/sender"));
    binding = (await gw().bindWorker(create(BindWorkerRequestSchema, { ...who(), occupantId: row!.occupantId })))
      .binding;
  });
  afterAll(async () => {
    await fleet?.close();
  });

  it("peers are off by default: list and send are typed refusals and nothing is written", async () => {
    const list = await gw().listFleetSeats(create(ListFleetSeatsRequestSchema, { ...who(), binding }));
    expect(list).toMatchObject({ allowed: false, reason: "peers_off" });
    const r = await send("while off");
    expect(r.state).toBe("refused");
    expect(JSON.parse(r.bodyJson)).toMatchObject({ outcome: "undelivered", reason: "peers_off" });
    expect(peerbox()).toHaveLength(0);
    expect(await receiptsUnder("peer:testbox/sender")).toBe(0);
  });

  it("once the owner turns them on: the fleet's other seats are listed (not the sender) and a peer message is delivered once", async () => {
    expect((await owner().owner.setPeerMessages(create(SetPeerMessagesRequestSchema, { enabled: true }))).enabled).toBe(
      true,
    );
    const list = await gw().listFleetSeats(create(ListFleetSeatsRequestSchema, { ...who(), binding }));
    expect(list.allowed).toBe(true);
    expect(list.seats.map((s) => s.seatId)).toEqual(["testbox/peerbox"]);
    const id = randomUUID();
    const r = await send("hello peer", "peerbox", id);
    expect(r.state).toBe("settled");
    expect(JSON.parse(r.bodyJson)).toMatchObject({ outcome: "delivered", deliveryId: id, seat: "testbox/peerbox" });
    expect(peerbox().filter((e) => e.text === "hello peer")).toEqual([
      expect.objectContaining({ deliveryId: id, conversationId: "peer:testbox/sender" }),
    ]);
    // The same id again is answered from its receipt, never sent twice.
    expect(JSON.parse((await send("hello peer", "peerbox", id)).bodyJson)).toMatchObject({
      outcome: "delivered",
      deliveryId: id,
    });
    expect(peerbox().filter((e) => e.text === "hello peer")).toHaveLength(1);
    const status = await gw().peerMessageStatus(create(PeerMessageStatusRequestSchema, { ...who(), binding, id }));
    expect(status.state).toBe("settled");
    expect(JSON.parse(status.bodyJson)).toMatchObject({ outcome: "delivered", deliveryId: id });
  });

  it("an unknown seat, the sender itself, a stale binding and text over 32 KiB are refused with nothing written", async () => {
    const before = await receiptsUnder("peer:testbox/sender");
    expect(JSON.parse((await send("to nobody", "nobody")).bodyJson)).toMatchObject({
      outcome: "undelivered",
      reason: "unknown_seat",
    });
    expect(JSON.parse((await send("to myself", "sender")).bodyJson)).toMatchObject({
      outcome: "undelivered",
      reason: "self",
    });
    expect(JSON.parse((await send("stale", "peerbox", randomUUID(), "0".repeat(64))).bodyJson)).toMatchObject({
      outcome: "undelivered",
      reason: "binding_stale",
    });
    await expect(send("x".repeat(32_769))).rejects.toThrow(/1-32768 characters/);
    expect(await receiptsUnder("peer:testbox/sender")).toBe(before);
    expect(peerbox().filter((e) => ["to nobody", "to myself", "stale"].includes(e.text))).toEqual([]);
  });

  it("issue 13 (bad input): a seat of another fleet (another controller and CA) is unknown here; nothing is written on either side", async () => {
    const other = await startFleet(driver);
    try {
      await ownerOf(other.controller.url, other.controller.ownerToken).addMailbox("elsewhere");
      const before = await receiptsUnder("peer:testbox/sender");
      await owner().owner.setPeerMessages(create(SetPeerMessagesRequestSchema, { enabled: true }));
      const r = await send("to another fleet", "testbox/elsewhere");
      expect(JSON.parse(r.bodyJson)).toMatchObject({ outcome: "undelivered", reason: "unknown_seat" });
      const list = await gw().listFleetSeats(create(ListFleetSeatsRequestSchema, { ...who(), binding }));
      expect(list.seats.map((x) => x.seatId)).not.toContain("testbox/elsewhere");
      expect(await receiptsUnder("peer:testbox/sender")).toBe(before);
      expect(new MailboxStore(join(other.agentStateDir, "mailboxes")).list("elsewhere").entries).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it("a peer carries no lead authority: a report from the recipient never routes to the peer's conversation", async () => {
    const id = randomUUID();
    await acceptReports(
      fleet.controller.database.db,
      "testbox",
      [{ id, seatName: "peerbox", text: "report after a peer message", createdAtMs: Date.now() }],
      new Date(),
    );
    const { workerReports } = await import("../../controller/db/schema.js");
    const [row] = await fleet.controller.database.db.select().from(workerReports).where(eq(workerReports.id, id));
    expect(row).toMatchObject({ conversationId: "global-default", unadopted: true });
  });

  it("with peers switched off again, sending is refused while reconciling the original stays possible (read-only)", async () => {
    await owner().owner.setPeerMessages(create(SetPeerMessagesRequestSchema, { enabled: false }));
    expect(JSON.parse((await send("after off")).bodyJson)).toMatchObject({ reason: "peers_off" });
    const ids = peerbox().map((e) => e.deliveryId);
    const status = await gw().peerMessageStatus(
      create(PeerMessageStatusRequestSchema, { ...who(), binding, id: ids[0]! }),
    );
    expect(status.state).toBe("settled");
  });
});
