/**
 * Rule 53 (scenario 27): `remoteLaunchCommitted` beats a reset host journal. A hire whose agent
 * answered that the launch committed (here: delivery_unconfirmed, the seat up and its brief
 * unconfirmed) is never settled not-launched, even when the agent's host journal has since been
 * wiped and a fresh census finds nothing of it; abandoned-unknown still settles it. A hire whose
 * answer was lost (the controller does not know) still settles not-launched on census proof.
 */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SettleHireReceiptRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { hireReceipts } from "../../controller/db/schema.js";
import { settleHireOutcome } from "../../controller/journal/hire-outcome.js";
import { HireState, unconfirmedBody } from "../../controller/hire/bodies.js";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { ownerOf } from "../kit/owner.js";

describe.each(DRIVERS)("rule 53: an agent's launchCommitted beats a reset host journal (%s)", (driver) => {
  let fleet: TestFleet;
  const conversationId = "rule-53";

  beforeAll(async () => {
    fleet = await startFleet(driver);
  });
  afterAll(async () => fleet?.close());

  /** A reserved hire on the fleet's machine, settled unresolved as the agent's answer (or its loss) would. */
  async function unresolvedHire(launchCommittedByAgent: boolean): Promise<string> {
    const id = randomUUID();
    const db = fleet.controller.database.db;
    await db.insert(hireReceipts).values({
      id,
      conversationId,
      fingerprint: "f".repeat(64),
      machine: "testbox",
      harness: "codex",
      state: HireState.Reserved,
    });
    const base = { schemaVersion: 1 as const, hireId: id, machine: "testbox", harness: "codex" as const };
    const reason = launchCommittedByAgent ? "delivery_unconfirmed" : "start_unconfirmed";
    const state = launchCommittedByAgent ? HireState.DeliveryUnconfirmed : HireState.StartUnconfirmed;
    await settleHireOutcome(db, {
      kind: "hire",
      id,
      state,
      unresolved: true,
      body: unconfirmedBody(base, reason, "test"),
      now: new Date(),
      launchCommittedByAgent,
    });
    return id;
  }
  const settle = (hireId: string, disposition: string) =>
    ownerOf(fleet.controller.url, fleet.controller.ownerToken).owner.settleHireReceipt(
      create(SettleHireReceiptRequestSchema, { hireId, conversationId, disposition }),
    );

  it("not-launched is refused for a hire the agent said launched, though its host journal holds nothing now", async () => {
    const id = await unresolvedHire(true);
    // The agent holds no journal entry for this id: exactly what a wiped state directory shows.
    const refused = await settle(id, "not-launched");
    expect(refused).toMatchObject({ state: "refused", detail: expect.stringMatching(/launchCommitted/) });
    expect(await settle(id, "abandoned-unknown")).toMatchObject({ state: "abandoned-unknown" });
  });

  it("a hire whose answer was lost still settles not-launched when a fresh census proves nothing launched", async () => {
    const id = await unresolvedHire(false);
    expect(await settle(id, "not-launched")).toMatchObject({ state: "settled-not-launched" });
  });
});
