/**
 * Issue 32, item 6, the agent's half: a mailbox proves an id absent for good only when its file does
 * not exist and no write of it is queued or running here; the fence it then writes makes every later
 * append of that id (a request still on its way, or after an agent restart) write nothing. Real
 * MailboxStore, MailboxAdapter and AgentService on a real directory.
 */
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MailboxStore } from "../../../../node-agent/mailbox/store.js";
import { MailboxAdapter } from "../../../../node-agent/harnesses/mailbox/adapter.js";
import { AdapterRegistry } from "../../../../node-agent/harnesses/registry.js";
import { SeatBook } from "../../../../node-agent/seats/seat-book.js";
import { SeatLocks } from "../../../../node-agent/seats/seat-locks.js";
import { createAgentService } from "../../../../node-agent/service/agent-service.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";
import { AgentResult, DeliveryMode, SeatKind } from "../../../../shared/verdicts.js";
import {
  FenceMailboxDeliveryRequestSchema,
  MailboxFenceState,
} from "../../../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { tempDir } from "../../../kit/test-db.js";

const msg = (deliveryId: string, text = "hello") => ({ deliveryId, text, conversationId: "c" });

describe("mailbox fence (issue 32 item 6: reconcile proves absence)", () => {
  it("item 6: an absent id with no write in progress is fenced; no later append writes it, restarted too", async () => {
    const root = tempDir("mbx-fence");
    const store = new MailboxStore(root);
    store.create("w");
    const id = randomUUID();
    const f = store.fence("w", id);
    expect(f).toMatchObject({ state: "fenced", path: join(root, "w", `${id}.json`) });
    const adapter = new MailboxAdapter(store, systemMonotonicClock);
    const seat = { name: "w", kind: SeatKind.Mailbox, occupantId: "o", title: "w", createdAtMs: 0 };
    const lateRequest = { deliveryId: id, text: "on its way", mode: DeliveryMode.Auto, conversationId: "c" };
    const late = await adapter.write(seat, lateRequest);
    expect(late).toMatchObject({ result: AgentResult.NotSent, reason: "fenced_by_reconcile" });
    expect(existsSync(join(root, "w", `${id}.json`))).toBe(false);
    // An agent restart: a new store on the same directory keeps the fence (and its first time).
    const restarted = new MailboxStore(root);
    await expect(restarted.append("w", msg(id))).rejects.toThrow(/fenced/);
    expect(restarted.fence("w", id)).toEqual(f);
    // The fence is no message: readers do not see it.
    expect(restarted.list("w")).toEqual({ entries: [], unreadable: [] });
  });

  it("item 6: a write queued or running is reported writing (receipt stays uncertain), once done found", async () => {
    const store = new MailboxStore(tempDir("mbx-fence"));
    store.create("w");
    const id = randomUUID();
    const writing = store.append("w", msg(id));
    expect(store.fence("w", id)).toMatchObject({ state: "writing" });
    const { entry } = await writing;
    const found = store.fence("w", id);
    const written = { deliveryId: id, seq: entry.seq, contentFingerprint: entry.contentFingerprint };
    expect(found).toMatchObject({ state: "found", entry: written });
    // Nothing was fenced: the written entry stays readable.
    expect(store.list("w").entries.map((e) => e.deliveryId)).toEqual([id]);
  });

  it("item 6: a write cut by a crash left only its temp file (written, then renamed): absent, fenced", () => {
    const root = tempDir("mbx-fence");
    const store = new MailboxStore(root);
    store.create("w");
    const id = randomUUID();
    writeFileSync(join(root, "w", `.${id}.json.cut.tmp`), '{"schemaVersion":1');
    expect(store.fence("w", id)).toMatchObject({ state: "fenced" });
    expect(readdirSync(join(root, "w")).filter((f) => f.startsWith(id))).toEqual([]);
  });

  it("item 6: FenceMailboxDelivery answers WRITING, FOUND and FENCED from the agent's own state", async () => {
    const stateDir = tempDir("agent-fence");
    const mailboxes = new MailboxStore(join(stateDir, "mailboxes"));
    const seats = new SeatBook(stateDir);
    seats.add("w", SeatKind.Mailbox, "w");
    mailboxes.create("w");
    const adapters = new AdapterRegistry().register(new MailboxAdapter(mailboxes, systemMonotonicClock));
    const svc = createAgentService({ seats, adapters, clock: systemMonotonicClock, mailboxes, locks: new SeatLocks() });
    const ctx = {} as HandlerContext;
    const ask = (deliveryId: string) =>
      svc.fenceMailboxDelivery!(create(FenceMailboxDeliveryRequestSchema, { seatName: "w", deliveryId }), ctx);
    const id = randomUUID();
    const pending = mailboxes.append("w", msg(id, "being written"));
    expect((await ask(id)).state).toBe(MailboxFenceState.WRITING);
    const { entry } = await pending;
    const found = await ask(id);
    const listed = { nativeReceiptId: `w#${entry.seq}`, contentFingerprint: entry.contentFingerprint };
    expect(found).toMatchObject({ state: MailboxFenceState.FOUND, ...listed });
    const absent = await ask(randomUUID());
    expect(absent.state).toBe(MailboxFenceState.FENCED);
    expect(Number(absent.fencedAtUnixMs)).toBeGreaterThan(0);
    await expect(ask("not-a-uuid")).rejects.toThrow(/uuid/);
  });
});
