/**
 * Issue 32 item 7, "content is delivered exactly or refused": a text the write would change (a
 * lone UTF-16 surrogate, which UTF-8 turns into U+FFFD) is refused before admission with reason
 * invalid_text; an error quotes at most 100 characters of an input; no SQLSTATE or SQL reaches a
 * lead; and another conversation's id is refused in the words of an unknown id (rule 7).
 */
import { randomUUID } from "node:crypto";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";

const META = "clankie/seat-call";
const driver = process.env.DATABASE_URL ? "postgres" : "pglite";
const LEAKS = /SQLSTATE|22021|22P05|select |insert into|params:|invalid byte sequence/i;

describe(`issue 32 item 7: content is delivered exactly or refused (${driver})`, () => {
  let fleet: TestFleet;
  let lead: LeadClient;
  let owner: ReturnType<typeof ownerOf>;
  const files = () => readdirSync(join(fleet.agentStateDir, "mailboxes", "inbox")).filter((f) => f.endsWith(".json"));

  beforeAll(async () => {
    fleet = await startFleet(driver);
    owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.addMailbox("inbox");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
  });
  afterAll(async () => {
    await lead?.close();
    await fleet?.close();
  });

  it("item 7: a lone surrogate in message is refused before dispatch (invalid_text): no receipt, no mailbox file", async () => {
    const before = files().length;
    for (const message of ["half a pair \ud83d here", "trailing \udc00", "\ud800"]) {
      const id = randomUUID();
      const r = await lead.call("message_seat", { seat: "inbox", message }, { [META]: { deliveryId: id } });
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toMatchObject({
        outcome: "invalid_argument",
        reason: "invalid_text",
        dispatched: false,
      });
      expect((await owner.receipts()).some((x) => x.deliveryId === id)).toBe(false);
    }
    expect(files().length).toBe(before);
    // A whole pair is text like any other, and arrives exactly.
    const ok = await lead.call("message_seat", { seat: "inbox", message: "a whole pair \ud83d\ude00" });
    expect(ok.structuredContent).toMatchObject({ outcome: "delivered" });
    const id = ok.structuredContent!.deliveryId as string;
    const entry = new MailboxStore(join(fleet.agentStateDir, "mailboxes"))
      .list("inbox")
      .entries.find((e) => e.deliveryId === id);
    expect(entry?.text).toBe("a whole pair \ud83d\ude00");
  });

  it("item 7: a lone surrogate in a question's answer, a hire's brief or an inReplyTo is refused the same way", async () => {
    const answer = await lead.call("message_seat", {
      seat: "inbox",
      questionAnswer: { requestId: "7", answers: { colour: { answers: ["red \udfff"] } } },
    });
    expect(answer.structuredContent).toMatchObject({ outcome: "invalid_argument", reason: "invalid_text" });
    const hire = await lead.call("hire_agent", {
      harness: "codex",
      workingDirectory: "/tmp",
      title: "t",
      role: "r",
      brief: "go \ud800",
    });
    expect(hire.structuredContent).toMatchObject({ outcome: "invalid_argument", reason: "invalid_text" });
    const reply = await lead.call("message_seat", { seat: "inbox", message: "hi", inReplyTo: "ref \u0000 nul" });
    expect(reply.structuredContent).toMatchObject({ outcome: "invalid_argument", reason: "invalid_text" });
    expect(JSON.stringify(reply.structuredContent)).not.toMatch(LEAKS);
  });

  it("item 7: errors quote at most the first 100 characters of an input (a 5,000-character id, a 10,000-character name)", async () => {
    const longId = "x".repeat(5000);
    const byId = await lead.call("message_seat", { seat: "inbox", message: "hi" }, { [META]: { deliveryId: longId } });
    expect(byId.structuredContent).toMatchObject({ outcome: "invalid_argument" });
    const detail = String(byId.structuredContent!.detail);
    expect(detail).toContain(`"${"x".repeat(100)}"… (5000 characters)`);
    expect(detail).not.toContain("x".repeat(101));
    const settle = await owner.owner
      .settleSeatDelivery({ deliveryId: longId, conversationId: "global-default", disposition: "abandoned-unknown" })
      .then(
        () => "",
        (e: Error) => e.message,
      );
    expect(settle).toMatch(/must be a UUID/);
    expect(settle).not.toContain("x".repeat(101));
    const machine = await owner.owner.addSeat({ name: "inbox2", machine: "m".repeat(10_000), kind: 1 }).then(
      () => "",
      (e: Error) => e.message,
    );
    expect(machine).toMatch(/no machine named/);
    expect(machine).not.toContain("m".repeat(101));
    const seat = await lead.call("message_seat", { seat: "s".repeat(10_000), message: "hi" });
    expect(seat.isError).toBe(true);
    expect(JSON.stringify(seat)).not.toContain("s".repeat(101));
  });

  it("item 7: a NUL in a seat name is refused at the edge as invalid_argument; no SQLSTATE or SQL text reaches the lead", async () => {
    for (const [tool, args] of [
      ["message_seat", { seat: "in\u0000box", message: "hello" }],
      ["message_seat", { seat: "inbox", questionAnswer: { requestId: "7", answers: { c: { answers: ["x"] } } } }],
      ["stop_task", { seat: "in\u0000box" }],
    ] as const) {
      const r = await lead.call(tool, args);
      expect(JSON.stringify(r), tool).not.toMatch(LEAKS);
    }
    const r = await lead.call("message_seat", { seat: "in\u0000box", message: "hello" });
    expect(r.structuredContent).toMatchObject({ outcome: "invalid_argument", reason: "invalid_argument" });
    expect(String(r.structuredContent!.detail)).toMatch(/NUL/);
    const stop = await lead.call("stop_task", { seat: "in\u0000box" });
    expect(stop.structuredContent).toMatchObject({ outcome: "invalid_argument" });
  });

  it("item 7, rule 7: another conversation's id is refused like an unknown id; no second receipt, nothing sent", async () => {
    const id = randomUUID();
    const mine = await lead.call("message_seat", { seat: "inbox", message: "mine" }, { [META]: { deliveryId: id } });
    expect(mine.structuredContent).toMatchObject({ outcome: "delivered" });
    const before = files().length;
    const other = await connectLead(
      fleet.controller.mcpUrl,
      (await owner.owner.issueLeadToken({ conversationId: "stranger" })).token,
    );
    try {
      for (const message of ["mine", "something else"]) {
        const r = await other.call(
          "message_seat",
          { seat: "inbox", message },
          { [META]: { deliveryId: id.toUpperCase() } },
        );
        expect(r.isError).toBe(true);
        expect(r.structuredContent).toMatchObject({ outcome: "refused", reason: "no_matching_receipt" });
        expect(JSON.stringify(r.structuredContent)).not.toMatch(/another conversation|conflict|delivered/);
        expect(r._meta?.[META]).toBeUndefined();
      }
      // Its reconcile answers for an unknown id in the same words as for the taken one.
      const unknown = await other.call("reconcile_seat_call", { deliveryId: randomUUID() });
      const taken = await other.call("reconcile_seat_call", { deliveryId: id });
      expect(taken.structuredContent).toEqual(unknown.structuredContent);
    } finally {
      await other.close();
    }
    expect(files().length).toBe(before);
    expect((await owner.receipts()).filter((x) => x.deliveryId === id)).toHaveLength(1);
  });
});
