/**
 * ADR 0207's delivery fences and settle paths (inventory rules 15-23, 28; scenarios 4-6,
 * 9-11, 25) on each database driver, with the node agent as a real process that the tests
 * freeze and kill to lose an answer for real.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS } from "../kit/test-db.js";
import { startControllerUnderTest, type ControllerUnderTest } from "../kit/controller-under-test.js";
import { connectLead } from "../kit/mcp-client.js";
import { runCli } from "../kit/cli.js";

const META = "clankie/seat-call";

describe.each(DRIVERS)("fences and settlement on %s", (driver) => {
  let t: ControllerUnderTest;
  beforeAll(async () => {
    t = await startControllerUnderTest(driver);
  });
  afterAll(async () => {
    await t?.close();
  });

  const send = (message: string, meta?: Record<string, unknown>) =>
    t.lead.call("message_seat", { seat: "inbox", message }, meta);
  const texts = () =>
    t.mailbox
      .list("inbox")
      .entries.filter((e) => e.conversationId === "global-default")
      .map((e) => e.text);

  /** A message whose answer is lost and which never reached the seat: the agent is frozen, then killed. */
  async function lostOriginal(text: string): Promise<string> {
    t.agent.freeze();
    const res = await send(text);
    expect(res.structuredContent).toMatchObject({
      outcome: "uncertain",
      deliveryStage: "uncertain",
      reconcileTool: "reconcile_seat_call",
    });
    await t.agent.restart();
    await t.waitOnline();
    return res.structuredContent!.deliveryId as string;
  }

  it("an uncertain delivery fences only itself: its exact content is refused with the original's id, other messages flow", async () => {
    const original = await lostOriginal("deploy the release");
    const resend = await send("  deploy the release\r\n");
    expect(resend.structuredContent).toMatchObject({
      outcome: "undelivered",
      reason: "fenced_by_unresolved_original",
      originalDeliveryId: original,
      originalState: "uncertain",
    });
    // The refusal says exactly what is blocked and how to lift it.
    expect(resend.structuredContent!.detail).toMatch(
      /^refused, nothing was sent: this text to (\S+\/inbox) matches delivery .*, which is uncertain\. Blocked: only this same text to \1; other messages to \1, and this text to other seats, go through\. To lift it: reconcile_seat_call/,
    );
    const other = await send("run the linter instead");
    expect(other.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(texts()).toContain("run the linter instead");
    expect(texts()).not.toContain("deploy the release");
  });

  it("the same id called again answers the original's uncertainty and never dispatches", async () => {
    const original = await lostOriginal("rotate the keys");
    const again = await send("rotate the keys", { [META]: { deliveryId: original } });
    expect(again.structuredContent).toMatchObject({ outcome: "uncertain", deliveryId: original });
    expect(again._meta?.[META]).toMatchObject({ state: "uncertain", deliveryId: original });
    expect(texts()).not.toContain("rotate the keys");
  });

  it("another conversation can neither reconcile nor settle the original, and nothing changes", async () => {
    const original = await lostOriginal("merge the branch");
    const token = (await t.owner.owner.issueLeadToken({ conversationId: "intruder" })).token;
    const other = await connectLead(t.controller.mcpUrl, token);
    try {
      expect((await other.call("reconcile_seat_call", { deliveryId: original })).structuredContent).toMatchObject({
        outcome: "no_matching_receipt",
      });
      expect(
        (await other.call("reconcile_seat_call", { deliveryId: original, settle: "not_delivered" })).structuredContent,
      ).toMatchObject({ outcome: "no_matching_receipt" });
    } finally {
      await other.close();
    }
    expect((await t.owner.receipts()).find((r) => r.deliveryId === original)?.state).toBe("uncertain");
  });

  it("reconcile reads the recipient's session: without the original it stays uncertain and sends nothing", async () => {
    const original = await lostOriginal("check the build");
    const rec = await t.lead.call("reconcile_seat_call", { deliveryId: original });
    expect(rec.structuredContent).toMatchObject({
      outcome: "uncertain",
      detail: expect.stringContaining("does not hold the original"),
    });
    expect(texts()).not.toContain("check the build");
  });

  it("the lead settles not_delivered: abandoned-unknown evidence, never resent; the next different message carries it as previous once; the same text stays refused", async () => {
    const original = await lostOriginal("ship it");
    const settled = await t.lead.call("reconcile_seat_call", { deliveryId: original, settle: "not_delivered" });
    expect(settled.structuredContent).toMatchObject({
      outcome: "undelivered",
      state: "abandoned-unknown",
      deliveryId: original,
    });
    expect((await t.owner.receipts()).find((r) => r.deliveryId === original)?.state).toBe("abandoned-unknown");
    const next = await send("ship the hotfix instead");
    expect(next.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(next.structuredContent!.previous).toContainEqual({ deliveryId: original, state: "abandoned-unknown" });
    const later = await send("and tell me when done");
    expect(later.structuredContent!.previous ?? []).not.toContainEqual(
      expect.objectContaining({ deliveryId: original }),
    );
    expect((await send("ship it")).structuredContent).toMatchObject({
      reason: "fenced_by_unresolved_original",
      originalDeliveryId: original,
      originalState: "abandoned-unknown",
    });
    expect((await send("ship it", { [META]: { deliveryId: original } })).structuredContent).toMatchObject({
      state: "abandoned-unknown",
    });
    expect(texts()).not.toContain("ship it");
    const again = await t.lead.call("reconcile_seat_call", { deliveryId: original, settle: "not_delivered" });
    expect(again.structuredContent).toMatchObject({ outcome: "refused", reason: "already_settled" });
  });

  it("the owner settles abandoned-unknown; unknown, foreign, settled and in-flight ids are refused and change nothing", async () => {
    const original = await lostOriginal("clean the cache");
    const cli = (...args: string[]) =>
      runCli([...args, "--json", "--state-dir", t.stateDir, "--controller", t.controller.url]);
    const unknown = await cli("seat-delivery", "settle", "00000000-0000-4000-8000-000000000000", "abandoned-unknown");
    expect(unknown.code).not.toBe(0);
    expect(JSON.parse(unknown.stdout).error.message).toMatch(/refused: no delivery/);
    const foreign = await cli(
      "seat-delivery",
      "settle",
      original,
      "abandoned-unknown",
      "--conversation",
      "someone-else",
    );
    expect(foreign.code).not.toBe(0);
    const ok = await cli("seat-delivery", "settle", original, "abandoned-unknown");
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ deliveryId: original, state: "abandoned-unknown" });
    const twice = await cli("seat-delivery", "settle", original, "abandoned-unknown");
    expect(JSON.parse(twice.stdout).error.message).toMatch(/already abandoned-unknown/);
    expect((await t.lead.call("reconcile_seat_call", { deliveryId: original })).structuredContent).toMatchObject({
      state: "abandoned-unknown",
    });

    t.agent.freeze();
    const pending = send("in flight while the owner tries to settle");
    let inFlight: string | undefined;
    for (let i = 0; i < 40 && !inFlight; i++) {
      inFlight = (await t.owner.receipts()).find((r) => r.state === "dispatching")?.deliveryId;
      if (!inFlight) await new Promise((r) => setTimeout(r, 25));
    }
    // The owner service directly: a CLI process could start slower than the in-flight window.
    await expect(
      t.owner.owner.settleSeatDelivery({
        deliveryId: inFlight!,
        conversationId: "global-default",
        disposition: "abandoned-unknown",
      }),
    ).rejects.toThrow(/still in flight/);
    await pending;
    await t.agent.restart();
    await t.waitOnline();
  });

  it("seat-delivery list and doctor show each unresolved receipt with id, conversation, seat and age", async () => {
    const original = await lostOriginal("list me");
    const list = await runCli([
      "seat-delivery",
      "list",
      "--json",
      "--state-dir",
      t.stateDir,
      "--controller",
      t.controller.url,
    ]);
    expect(JSON.parse(list.stdout).unresolved).toContainEqual(
      expect.objectContaining({
        id: original,
        conversation: "global-default",
        seat: "box/inbox",
        state: "uncertain",
        ageMs: expect.any(Number),
      }),
    );
    const doctor = await runCli(["doctor", "--json", "--state-dir", t.stateDir, "--controller", t.controller.url]);
    expect(JSON.parse(doctor.stdout).unresolvedDeliveries).toContainEqual(
      expect.objectContaining({ deliveryId: original, conversationId: "global-default", seatId: "box/inbox" }),
    );
  });

  it("one notice per unresolved receipt reaches the seat, and an acknowledged notice is not repeated after a restart", async () => {
    const original = await lostOriginal("notice me");
    const notices = () =>
      t.mailbox.list("inbox").entries.filter((e) => e.conversationId === "clankie-notice" && e.inReplyTo === original);
    for (let i = 0; i < 200 && notices().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(notices()).toHaveLength(1);
    expect(notices()[0]!.text).toContain(original);
    await t.agent.restart();
    await t.waitOnline();
    await new Promise((r) => setTimeout(r, 500));
    expect(notices()).toHaveLength(1);
  });

  it("the unattended release frees a different message only after 5 minutes, with the recipient idle and its session read without the original", async () => {
    const original = await lostOriginal("stale order");
    t.advance(4 * 60_000);
    const early = await send("not yet five minutes");
    expect(early.structuredContent!.previous ?? []).not.toContainEqual(
      expect.objectContaining({ deliveryId: original }),
    );
    expect((await t.owner.receipts()).find((r) => r.deliveryId === original)?.state).toBe("uncertain");
    t.advance(2 * 60_000);
    const late = await send("a different message after five minutes");
    expect(late.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(late.structuredContent!.previous).toContainEqual({ deliveryId: original, state: "abandoned-unknown" });
    expect((await t.owner.receipts()).find((r) => r.deliveryId === original)?.state).toBe("abandoned-unknown");
    expect(texts()).not.toContain("stale order");
    expect((await send("stale order")).structuredContent).toMatchObject({
      reason: "fenced_by_unresolved_original",
      originalDeliveryId: original,
    });
  });
});
