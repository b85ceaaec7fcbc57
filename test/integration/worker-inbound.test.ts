/**
 * message_clankie's controller half on each driver (rule 48, scenario 22), through the real
 * AgentGatewayService and database: a binding names the seat's current occupant; a message under
 * it is stored (retained for the lead, not read); a stale binding, an over-long text and an id
 * already settled as never received are refused with nothing stored; settling an unknown id
 * tombstones it, so its not_sent is definite and a late copy is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import {
  BindWorkerRequestSchema,
  SubmitWorkerMessageRequestSchema,
  WorkerMessageStatusRequestSchema,
} from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { seats } from "../../controller/db/schema.js";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { purgeReadReports } from "../../controller/reports/worker-reports.js";

describe.each(DRIVERS)("worker inbound messages on %s", (driver) => {
  let fleet: TestFleet;
  let lead: LeadClient;
  let occupantId: string;
  const who = () => ({ machine: fleet.agent.link.machine, instanceId: fleet.agent.link.instanceId, seatName: "inbox" });
  const gw = () => fleet.agent.link.gateway;
  const texts = async () =>
    ((await lead.call("worker_reports", { limit: 100 })).structuredContent?.reports as {
      deliveryId: string;
      text: string;
    }[]) ?? [];

  beforeAll(async () => {
    fleet = await startFleet(driver);
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("inbox");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    const [row] = await fleet.controller.database.db
      .select({ occupantId: seats.occupantId })
      .from(seats)
      .where(eq(seats.id, "testbox/inbox"));
    occupantId = row!.occupantId;
  });
  afterAll(async () => {
    await lead?.close();
    await fleet?.close();
  });

  it("binds only the seat's current occupant, and a message under that binding is stored for the lead", async () => {
    const wrong = await gw().bindWorker(create(BindWorkerRequestSchema, { ...who(), occupantId: "someone-else" }));
    expect(wrong).toMatchObject({ bound: false, reason: "occupant_changed" });
    const b = await gw().bindWorker(create(BindWorkerRequestSchema, { ...who(), occupantId }));
    expect(b).toMatchObject({ bound: true, seatId: "testbox/inbox", binding: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const id = randomUUID();
    const r = await gw().submitWorkerMessage(
      create(SubmitWorkerMessageRequestSchema, {
        ...who(),
        binding: b.binding,
        id,
        text: "bound report",
        createdUnixMs: BigInt(Date.now()),
      }),
    );
    expect(r).toMatchObject({ deliveryStage: "stored", definitiveNotSent: false });
    expect(
      await gw().workerMessageStatus(create(WorkerMessageStatusRequestSchema, { ...who(), id, settleUnknown: true })),
    ).toMatchObject({ deliveryStage: "stored", definitiveNotSent: false });
    // The same id again is the same message: still one copy.
    await gw().submitWorkerMessage(
      create(SubmitWorkerMessageRequestSchema, {
        ...who(),
        binding: b.binding,
        id,
        text: "bound report",
        createdUnixMs: BigInt(Date.now()),
      }),
    );
    expect((await texts()).filter((x) => x.deliveryId === id)).toEqual([
      expect.objectContaining({ text: "bound report" }),
    ]);
  });

  it("a stale binding is refused with nothing stored (definite not_sent)", async () => {
    const id = randomUUID();
    const r = await gw().submitWorkerMessage(
      create(SubmitWorkerMessageRequestSchema, {
        ...who(),
        binding: "0".repeat(64),
        id,
        text: "stale",
        createdUnixMs: BigInt(Date.now()),
      }),
    );
    expect(r).toMatchObject({ deliveryStage: "rejected", definitiveNotSent: true, reason: "binding_stale" });
    expect((await texts()).some((x) => x.deliveryId === id)).toBe(false);
  });

  it("text over 32 KiB is a typed refusal and nothing is stored", async () => {
    const b = await gw().bindWorker(create(BindWorkerRequestSchema, { ...who(), occupantId }));
    const id = randomUUID();
    await expect(
      gw().submitWorkerMessage(
        create(SubmitWorkerMessageRequestSchema, {
          ...who(),
          binding: b.binding,
          id,
          text: "x".repeat(32_769),
          createdUnixMs: BigInt(Date.now()),
        }),
      ),
    ).rejects.toThrow(/1-32768 characters/);
    expect(
      await gw().workerMessageStatus(create(WorkerMessageStatusRequestSchema, { ...who(), id, settleUnknown: false })),
    ).toMatchObject({ deliveryStage: "unknown" });
  });

  it("rule 51: a read report past its 24 h retention answers the worker unknown, never not_sent, even with settle_unknown", async () => {
    const b = await gw().bindWorker(create(BindWorkerRequestSchema, { ...who(), occupantId }));
    const id = randomUUID();
    await gw().submitWorkerMessage(
      create(SubmitWorkerMessageRequestSchema, {
        ...who(),
        binding: b.binding,
        id,
        text: "read, then aged out",
        createdUnixMs: BigInt(Date.now()),
      }),
    );
    expect((await texts()).some((x) => x.deliveryId === id)).toBe(true);
    expect((await lead.call("acknowledge_worker_reports", { deliveryIds: [id] })).structuredContent).toMatchObject({
      acknowledged: [id],
    });
    await purgeReadReports(fleet.controller.database.db, new Date(Date.now() + 25 * 60 * 60 * 1000));
    const status = await gw().workerMessageStatus(
      create(WorkerMessageStatusRequestSchema, { ...who(), id, settleUnknown: true }),
    );
    expect(status).toMatchObject({ deliveryStage: "unknown", definitiveNotSent: false });
    // The text is gone, and the lead is never offered it again.
    expect((await texts()).some((x) => x.deliveryId === id)).toBe(false);
  });

  it("settling an id the controller never received makes its not_sent definite: a late copy is refused and never reaches the lead", async () => {
    const id = randomUUID();
    expect(
      await gw().workerMessageStatus(create(WorkerMessageStatusRequestSchema, { ...who(), id, settleUnknown: false })),
    ).toMatchObject({ deliveryStage: "unknown", definitiveNotSent: false });
    expect(
      await gw().workerMessageStatus(create(WorkerMessageStatusRequestSchema, { ...who(), id, settleUnknown: true })),
    ).toMatchObject({ deliveryStage: "not_sent", definitiveNotSent: true });
    const b = await gw().bindWorker(create(BindWorkerRequestSchema, { ...who(), occupantId }));
    const late = await gw().submitWorkerMessage(
      create(SubmitWorkerMessageRequestSchema, {
        ...who(),
        binding: b.binding,
        id,
        text: "late copy",
        createdUnixMs: BigInt(Date.now()),
      }),
    );
    expect(late).toMatchObject({ deliveryStage: "rejected", definitiveNotSent: true, reason: "settled_not_sent" });
    expect((await texts()).some((x) => x.text === "late copy")).toBe(false);
  });
});
