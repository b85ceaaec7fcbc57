/**
 * Rule 26 for peer messages: the remote parts of a peer message's authority (the owner's peer
 * switch and the sender's binding) are read again with the final observation, just before the
 * agent call. A peer message admitted while peers were on, that waits for its recipient's turn
 * while the owner turns peers off, is not sent (peers_off), and nothing reaches the recipient.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import { BindWorkerRequestSchema, SendPeerMessageRequestSchema } from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { SetPeerMessagesRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { callReceipts, seats } from "../../controller/db/schema.js";
import { releaseLease, tryTakeLease } from "../kit/seat-lease.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { ownerOf } from "../kit/owner.js";
import { until } from "../kit/until.js";

describe.each(DRIVERS)(
  "rule 26: a peer message's sender authority is read again before the agent call (%s)",
  (driver) => {
    let fleet: TestFleet;
    let binding: string;
    const who = () => ({
      machine: fleet.agent.link.machine,
      instanceId: fleet.agent.link.instanceId,
      seatName: "sender",
    });
    const owner = () => ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    const peerbox = () => new MailboxStore(join(fleet.agentStateDir, "mailboxes")).list("peerbox").entries;
    const peers = (enabled: boolean) =>
      owner().owner.setPeerMessages(create(SetPeerMessagesRequestSchema, { enabled }));

    beforeAll(async () => {
      // Longer than any stall of a loaded machine: the test frees the turn itself.
      fleet = await startFleet(driver, { seatTurnWaitMs: 30_000 });
      await owner().addMailbox("sender");
      await owner().addMailbox("peerbox");
      const [row] = await fleet.controller.database.db
        .select({ occupantId: seats.occupantId })
        .from(seats)
        .where(eq(seats.id, "testbox/sender"));
      binding = (
        await fleet.agent.link.gateway.bindWorker(
          create(BindWorkerRequestSchema, { ...who(), occupantId: row!.occupantId }),
        )
      ).binding;
    });
    afterAll(async () => fleet?.close());

    it("peers turned off while the message waits for the recipient's turn: not sent, peers_off, nothing written", async () => {
      await peers(true);
      const db = fleet.controller.database.db;
      // Another delivery holds the recipient's turn, so the peer message waits after its admission.
      expect(await tryTakeLease(db, "testbox/peerbox", "another-delivery", 30_000)).toBe(true);
      const id = randomUUID();
      const sent = fleet.agent.link.gateway.sendPeerMessage(
        create(SendPeerMessageRequestSchema, {
          ...who(),
          binding,
          recipientSeat: "peerbox",
          id,
          text: "admitted while peers were on",
        }),
      );
      // Admitted (its receipt written) while peers were on: only the recheck can refuse it now.
      await until(
        async () => (await db.select().from(callReceipts).where(eq(callReceipts.id, id))).length === 1,
        "the peer message admitted",
      );
      await peers(false);
      await releaseLease(db, "testbox/peerbox", "another-delivery");
      const r = await sent;
      expect(JSON.parse(r.bodyJson)).toMatchObject({ outcome: "undelivered", reason: "peers_off" });
      expect(peerbox()).toHaveLength(0);
    });
  },
);
