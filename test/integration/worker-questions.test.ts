/**
 * Issue 13 part 4 (rules 35 and 39), the controller's half, through the real
 * AgentGatewayService and database: a worker's question reaches its EXACT hiring conversation
 * (the conversation whose hire produced the seat's current occupant), even after another
 * conversation messaged the seat; never another conversation; a seat nobody hired, or a hire of
 * an earlier occupant, keeps its questions with the owner (nothing filed). The same native
 * question sent twice is one copy. The hire row is written as the hire pipeline writes it
 * (stop-task-authority does the same): this suite is about routing, not launching.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import { SubmitWorkerQuestionRequestSchema } from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { hireReceipts, seats } from "../../controller/db/schema.js";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { reportsOf } from "../kit/worker-reports.js";

describe.each(DRIVERS)("worker questions on %s", (driver) => {
  let fleet: TestFleet;
  let owner: ReturnType<typeof ownerOf>;
  let occupantId: string;
  const leads: LeadClient[] = [];
  const leadFor = async (conversationId: string) => {
    const token = (await owner.owner.issueLeadToken({ conversationId })).token;
    const l = await connectLead(fleet.controller.mcpUrl, token);
    leads.push(l);
    return l;
  };
  let n = 0;
  const ask = (seatName = "inbox", occupant = () => occupantId) => {
    const k = ++n;
    return create(SubmitWorkerQuestionRequestSchema, {
      machine: fleet.agent.link.machine,
      instanceId: fleet.agent.link.instanceId,
      seatName,
      occupantId: occupant(),
      threadId: "thread-1",
      turnId: `turn-${k}`,
      itemId: `call_${k}`,
      requestId: String(k),
      questions: [
        {
          id: "colour",
          header: "Colour",
          question: `Which colour (${k})?`,
          isOther: true,
          options: [{ label: "Red", description: "warm" }],
        },
      ],
      askedUnixMs: BigInt(Date.now()),
    });
  };
  const hire = async (conversationId: string, occupant: string) => {
    const db = fleet.controller.database.db;
    const [seat] = await db.select().from(seats).where(eq(seats.name, "inbox"));
    await db.insert(hireReceipts).values({
      id: randomUUID(),
      conversationId,
      fingerprint: "f",
      machine: "testbox",
      harness: "codex",
      state: "spawned",
      seatId: seat!.id,
      occupantId: occupant,
    });
  };

  beforeAll(async () => {
    fleet = await startFleet(driver);
    owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.addMailbox("inbox");
    const [row] = await fleet.controller.database.db
      .select({ occupantId: seats.occupantId })
      .from(seats)
      .where(eq(seats.id, "testbox/inbox"));
    occupantId = row!.occupantId;
  });
  afterAll(async () => {
    for (const l of leads) await l.close().catch(() => {});
    await fleet?.close();
  });

  it("a seat nobody hired keeps its question with the owner: not_hired, nothing filed for any lead", async () => {
    const own = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    leads.push(own);
    const r = await fleet.agent.link.gateway.submitWorkerQuestion(ask());
    expect(r).toMatchObject({ filed: false, reason: "not_hired" });
    expect((await reportsOf(own)).some((x) => x.text.includes("Question from"))).toBe(false);
  });

  it("a hire of an earlier occupant does not take the new occupant's questions", async () => {
    await hire("hired-earlier", `${occupantId}-before`);
    const earlier = await leadFor("hired-earlier");
    expect(await fleet.agent.link.gateway.submitWorkerQuestion(ask())).toMatchObject({
      filed: false,
      reason: "not_hired",
    });
    expect(await reportsOf(earlier)).toEqual([]);
  });

  it("the question reaches the exact hiring conversation, with its binding and how to answer; another conversation that messaged the seat later does not get it", async () => {
    await hire("hirer", occupantId);
    const hirer = await leadFor("hirer");
    const other = await leadFor("messenger");
    // The messenger's delivered message would adopt the seat's reports (rule 50): questions stay with the hirer.
    expect((await other.call("message_seat", { seat: "inbox", message: "status?" })).structuredContent).toMatchObject({
      outcome: "delivered",
    });
    const q = ask();
    const r = await fleet.agent.link.gateway.submitWorkerQuestion(q);
    expect(r).toMatchObject({ filed: true, questionId: expect.stringMatching(/^question-[0-9a-f]{32}$/) });
    const mine = (await reportsOf(hirer)).filter((x) => x.deliveryId === r.questionId);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.text).toContain(`requestId ${q.requestId}`);
    expect(mine[0]!.text).toContain(`turn ${q.turnId}, call ${q.itemId}`);
    expect(mine[0]!.text).toContain('"questionAnswer":{"requestId":');
    expect((await reportsOf(other)).some((x) => x.deliveryId === r.questionId)).toBe(false);
    // The same native question again is the same report: one copy.
    expect(await fleet.agent.link.gateway.submitWorkerQuestion(q)).toMatchObject({
      filed: true,
      questionId: r.questionId,
    });
    expect((await reportsOf(hirer)).filter((x) => x.deliveryId === r.questionId)).toHaveLength(1);
  });

  it("a question from another occupant than the seat's current one is refused with nothing filed", async () => {
    expect(await fleet.agent.link.gateway.submitWorkerQuestion(ask("inbox", () => "someone-else"))).toMatchObject({
      filed: false,
      reason: "occupant_changed",
    });
    expect(await fleet.agent.link.gateway.submitWorkerQuestion(ask("nobody"))).toMatchObject({
      filed: false,
      reason: "unknown_seat",
    });
  });

  it("message_seat{questionAnswer}: only the hiring conversation may answer; the agent, with no such question, refuses; nothing is sent either way", async () => {
    const other = await leadFor("not-the-hirer");
    const answer = { seat: "inbox", questionAnswer: { requestId: "1", answers: { colour: { answers: ["Red"] } } } };
    expect((await other.call("message_seat", answer)).structuredContent).toMatchObject({
      outcome: "refused",
      reason: "not_authorized",
      seat: "testbox/inbox",
    });
    const hirer = await leadFor("hirer");
    // A mailbox seat has no native question: the agent's desk holds no watcher for it.
    expect((await hirer.call("message_seat", answer)).structuredContent).toMatchObject({
      outcome: "refused",
      reason: "unknown_seat",
      requestId: "1",
    });
  });

  it("message_seat takes exactly one of message or questionAnswer, and bounded answers", async () => {
    const hirer = await leadFor("hirer");
    const both = await hirer.call("message_seat", {
      seat: "inbox",
      message: "hi",
      questionAnswer: { requestId: "1", answers: { colour: { answers: ["Red"] } } },
    });
    expect(both.isError).toBe(true);
    expect(JSON.stringify(both.content)).toMatch(/exactly one of message or questionAnswer/);
    const none = await hirer.call("message_seat", { seat: "inbox" });
    expect(none.isError).toBe(true);
    const empty = await hirer.call("message_seat", { seat: "inbox", questionAnswer: { requestId: "1", answers: {} } });
    expect(empty.isError).toBe(true);
    expect(JSON.stringify(empty.content)).toMatch(/1-20 question ids/);
  });
});
