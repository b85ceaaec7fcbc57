/** A journal with one machine ("box") and one idle mailbox seat on it, for suites that drive the journal's statements directly. */
import type { Db } from "../../controller/db/open.js";
import { machines, seats } from "../../controller/db/schema.js";

export async function seedMailboxSeat(db: Db, seatId: string): Promise<void> {
  await db.insert(machines).values({
    name: "box",
    endpoint: "https://box",
    agentToken: "t",
    instanceId: "i",
    platform: "linux",
    capabilityVersion: 1,
    agentVersion: "0",
  });
  await db.insert(seats).values({
    id: seatId,
    machine: "box",
    name: "inbox",
    kind: "mailbox",
    status: "idle",
    occupantId: "occ",
    inputCapabilities: { deliveryModes: ["queue"], interrupt: false, nextTurnOnly: false },
  });
}
