/**
 * Issue 13 part 4 (rules 35 and 39) with VUH-1638's call receipts: message_seat{questionAnswer}
 * is admitted through the same call receipt journal as any message_seat — its id (the caller's
 * deliveryId, else a minted one), conversation and request fingerprint are committed before the
 * agent is asked, and the result is settled there. A same-id replay returns the original result
 * without asking the agent again (proved by changing what a fresh ask would answer), a same id
 * with another answer or from another conversation is a conflict, and reconcile_seat_call
 * ({deliveryId}) reads the original. A lost result (the controller's drop_question_answer) is
 * uncertain, replays uncertain, and reconcile keeps it uncertain unless the agent proves its
 * fate. On both drivers, through the real controller and agent.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { callReceipts, hireReceipts, seats } from "../../controller/db/schema.js";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";

const META = "clankie/seat-call";
const answerOf = (colour: string, requestId = "7") => ({
  seat: "inbox",
  questionAnswer: { requestId, answers: { colour: { answers: [colour] } } },
});

describe.each(DRIVERS)("question answers are seat-call receipts on %s", (driver) => {
  let fleet: TestFleet;
  let owner: ReturnType<typeof ownerOf>;
  let hirer: LeadClient;
  let other: LeadClient;
  let hireId: string;

  beforeAll(async () => {
    fleet = await startFleet(driver);
    owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.addMailbox("inbox");
    const db = fleet.controller.database.db;
    const [seat] = await db.select().from(seats).where(eq(seats.id, "testbox/inbox"));
    // The hire row as the hire pipeline writes it: this suite is about the answer's receipt.
    hireId = randomUUID();
    await db.insert(hireReceipts).values({
      id: hireId,
      conversationId: "hirer",
      fingerprint: "f",
      machine: "testbox",
      harness: "codex",
      state: "spawned",
      seatId: seat!.id,
      occupantId: seat!.occupantId,
    });
    hirer = await connectLead(
      fleet.controller.mcpUrl,
      (await owner.owner.issueLeadToken({ conversationId: "hirer" })).token,
    );
    other = await connectLead(
      fleet.controller.mcpUrl,
      (await owner.owner.issueLeadToken({ conversationId: "bystander" })).token,
    );
  });
  afterAll(async () => {
    await hirer?.close().catch(() => {});
    await other?.close().catch(() => {});
    await fleet?.close();
  });

  it("rule 39 / VUH-1638: the answer's id, conversation and fingerprint are a call receipt, settled with the agent's result, and `_meta` names it", async () => {
    const id = randomUUID();
    const res = await hirer.call("message_seat", answerOf("Red"), { [META]: { deliveryId: id } });
    // The mailbox seat has no native question: the agent's desk refuses, nothing is sent.
    expect(res.structuredContent).toMatchObject({
      outcome: "refused",
      reason: "unknown_seat",
      requestId: "7",
      deliveryId: id,
      seat: "testbox/inbox",
    });
    expect(res._meta?.[META]).toEqual({ id, tool: "message_seat", state: "settled", deliveryId: id });
    const [row] = await fleet.controller.database.db.select().from(callReceipts).where(eq(callReceipts.id, id));
    expect(row).toMatchObject({ tool: "message_seat", conversationId: "hirer", state: "settled" });
    expect(row!.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.result).toEqual(res.structuredContent);
  });

  it("VUH-1638: without a caller id the controller mints one, and reconcile_seat_call({deliveryId}) reads the original answer", async () => {
    const res = await hirer.call("message_seat", answerOf("Blue"));
    const id = res.structuredContent!.deliveryId as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const rec = await hirer.call("reconcile_seat_call", { deliveryId: id });
    expect(rec.structuredContent).toEqual(res.structuredContent);
    expect(rec._meta?.[META]).toMatchObject({ id, state: "settled" });
    // Another conversation never sees it.
    expect((await other.call("reconcile_seat_call", { deliveryId: id })).structuredContent).toMatchObject({
      outcome: "no_matching_receipt",
    });
  });

  it("VUH-1638: a same-id replay returns the original result without asking again, even after a fresh ask would answer otherwise", async () => {
    const id = randomUUID();
    const first = await hirer.call("message_seat", answerOf("Red", "8"), { [META]: { deliveryId: id } });
    expect(first.structuredContent).toMatchObject({ outcome: "refused", reason: "unknown_seat", deliveryId: id });
    // Now nobody hired the seat's occupant: a fresh answer is not_authorized before any agent is asked.
    const db = fleet.controller.database.db;
    await db.update(hireReceipts).set({ conversationId: "someone-else" }).where(eq(hireReceipts.id, hireId));
    try {
      const fresh = await hirer.call("message_seat", answerOf("Red", "8"));
      expect(fresh.structuredContent).toMatchObject({ outcome: "refused", reason: "not_authorized" });
      const again = await hirer.call("message_seat", answerOf("Red", "8"), { [META]: { deliveryId: id } });
      expect(again.structuredContent).toEqual(first.structuredContent);
      expect(again._meta?.[META]).toEqual(first._meta?.[META]);
    } finally {
      await db.update(hireReceipts).set({ conversationId: "hirer" }).where(eq(hireReceipts.id, hireId));
    }
  });

  it("VUH-1638: the same id with another answer, or from another conversation, is a receipt conflict: nothing is sent", async () => {
    const id = randomUUID();
    await hirer.call("message_seat", answerOf("Red", "9"), { [META]: { deliveryId: id } });
    const changed = await hirer.call("message_seat", answerOf("Blue", "9"), { [META]: { deliveryId: id } });
    expect(changed.isError).toBe(true);
    expect(changed.structuredContent).toMatchObject({ outcome: "refused", reason: "receipt_conflict", deliveryId: id });
    const foreign = await other.call("message_seat", answerOf("Red", "9"), { [META]: { deliveryId: id } });
    // Rule 7, issue 32 item 7: refused, in the words of an unknown id; nothing says it exists elsewhere.
    expect(foreign.structuredContent).toMatchObject({ outcome: "refused", reason: "no_matching_receipt" });
    // A message_seat text under an answer's id is a different request too.
    const asText = await hirer.call(
      "message_seat",
      { seat: "inbox", message: "hello" },
      { [META]: { deliveryId: id } },
    );
    expect(asText.structuredContent).toMatchObject({ outcome: "refused", reason: "receipt_conflict" });
    const [row] = await fleet.controller.database.db.select().from(callReceipts).where(eq(callReceipts.id, id));
    expect(row).toMatchObject({ conversationId: "hirer", state: "settled" });
  });

  it("VUH-1638: a deliveryId that is not a UUID is refused before any receipt is written", async () => {
    const res = await hirer.call("message_seat", answerOf("Red"), { [META]: { deliveryId: "not-a-uuid" } });
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({ outcome: "invalid_argument" });
    expect(
      await fleet.controller.database.db.select().from(callReceipts).where(eq(callReceipts.id, "not-a-uuid")),
    ).toEqual([]);
  });
});

describe.each(DRIVERS)("a question answer whose result is lost, on %s", (driver) => {
  let fleet: TestFleet;
  let hirer: LeadClient;

  beforeAll(async () => {
    // drop_question_answer: the agent's answer arrives and is lost on the way back, as a cut link would lose it.
    fleet = await startFleet(driver, { fault: "drop_question_answer" });
    const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.addMailbox("inbox");
    const db = fleet.controller.database.db;
    const [seat] = await db.select().from(seats).where(eq(seats.id, "testbox/inbox"));
    await db.insert(hireReceipts).values({
      id: randomUUID(),
      conversationId: "hirer",
      fingerprint: "f",
      machine: "testbox",
      harness: "codex",
      state: "spawned",
      seatId: seat!.id,
      occupantId: seat!.occupantId,
    });
    hirer = await connectLead(
      fleet.controller.mcpUrl,
      (await owner.owner.issueLeadToken({ conversationId: "hirer" })).token,
    );
  });
  afterAll(async () => {
    await hirer?.close().catch(() => {});
    await fleet?.close();
  });

  it("rule 39 / VUH-1638: it is uncertain in the journal, a replay returns that uncertain original, and reconcile_seat_call keeps it uncertain when the agent cannot prove its fate", async () => {
    const id = randomUUID();
    const lost = await hirer.call("message_seat", answerOf("Red"), { [META]: { deliveryId: id } });
    expect(lost.structuredContent).toMatchObject({
      outcome: "uncertain",
      deliveryId: id,
      requestId: "7",
      reconcileTool: "reconcile_seat_call",
    });
    expect(lost._meta?.[META]).toEqual({ id, tool: "message_seat", state: "uncertain", deliveryId: id });
    const [row] = await fleet.controller.database.db.select().from(callReceipts).where(eq(callReceipts.id, id));
    expect(row).toMatchObject({ state: "uncertain", conversationId: "hirer" });
    const replay = await hirer.call("message_seat", answerOf("Red"), { [META]: { deliveryId: id } });
    expect(replay.structuredContent).toEqual(lost.structuredContent);
    expect(replay._meta?.[META]).toMatchObject({ state: "uncertain" });
    // The mailbox seat's agent holds no such question: nothing proves its fate, so it stays uncertain.
    const rec = await hirer.call("reconcile_seat_call", { deliveryId: id });
    expect(rec.structuredContent).toMatchObject({
      outcome: "uncertain",
      deliveryId: id,
      requestId: "7",
      sessionCheck: expect.stringContaining("never resent"),
    });
    expect(rec._meta?.[META]).toMatchObject({ id, state: "uncertain" });
    const [after] = await fleet.controller.database.db.select().from(callReceipts).where(eq(callReceipts.id, id));
    expect(after).toMatchObject({ state: "uncertain" });
  });
});
