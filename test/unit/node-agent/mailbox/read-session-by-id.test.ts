/**
 * Rule 30's read for a mailbox seat: a reconcile asks the agent about one delivery id (ReadSession with
 * delivery_id), and the mailbox answers from that id's own file, not by reading every entry it holds (8,100
 * entries took 125–170 ms of the agent's event loop per reconcile, 1.6 s cold). What it answers is what the
 * whole listing would have said about that id: found, absent, or a gap. Real MailboxStore and MailboxAdapter
 * on a real directory.
 */
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MailboxStore } from "../../../../node-agent/mailbox/store.js";
import { MailboxAdapter } from "../../../../node-agent/harnesses/mailbox/adapter.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";
import { contentFingerprint } from "../../../../shared/fingerprint.js";
import { SeatKind } from "../../../../shared/verdicts.js";
import { tempDir } from "../../../kit/test-db.js";

const seat = { name: "w", kind: SeatKind.Mailbox, occupantId: "o", title: "w", createdAtMs: 0 };

async function mailboxOf(n: number) {
  const root = tempDir("mbx-read");
  const store = new MailboxStore(root);
  store.create("w");
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    ids.push(id);
    await store.append("w", { deliveryId: id, text: `m${i}`, conversationId: "c" });
  }
  return { root, store, adapter: new MailboxAdapter(store, systemMonotonicClock), ids };
}

describe("rule 30: a mailbox answers a reconcile's one id from that id's file", () => {
  it("found among the others, with what the listing holds for it; another entry's unreadable file is no gap for it", async () => {
    const { root, adapter, ids } = await mailboxOf(30);
    writeFileSync(join(root, "w", `${randomUUID()}.json`), "{ torn");
    const whole = await adapter.readSession(seat, 0);
    expect(whole.complete).toBe(false);
    const one = await adapter.readSession(seat, 0, ids[17]!.toUpperCase());
    expect(one.complete).toBe(true);
    expect(one.entries).toEqual(whole.entries.filter((e) => e.deliveryId === ids[17]));
    expect(one.entries).toHaveLength(1);
    expect(one.entries[0]).toMatchObject({ nativeReceiptId: "w#18", contentFingerprint: contentFingerprint("m17") });
  });

  it("issue 32 item 4: an entry written before ids were canonical, under an upper-case name, is found by its id", async () => {
    const { root, adapter } = await mailboxOf(5);
    const id = randomUUID();
    const upper = id.toUpperCase();
    const entry = {
      schemaVersion: 1,
      deliveryId: upper,
      seq: 6,
      text: "from before",
      conversationId: "c",
      receivedAtMs: Date.now(),
      contentFingerprint: contentFingerprint("from before"),
    };
    writeFileSync(join(root, "w", `${upper}.json`), JSON.stringify(entry));
    const one = await adapter.readSession(seat, 0, id);
    expect(one).toMatchObject({ complete: true, entries: [{ deliveryId: upper, nativeReceiptId: "w#6" }] });
  });

  it("an absent id is absent and the read complete; an id whose own file is unreadable is a gap, never absent", async () => {
    const { root, adapter } = await mailboxOf(5);
    expect(await adapter.readSession(seat, 0, randomUUID())).toMatchObject({ complete: true, entries: [] });
    const torn = randomUUID();
    writeFileSync(join(root, "w", `${torn}.json`), "{ torn");
    expect(await adapter.readSession(seat, 0, torn)).toMatchObject({ complete: false, entries: [] });
    // Not a uuid: no file can hold it.
    expect(await adapter.readSession(seat, 0, "../w")).toMatchObject({ complete: true, entries: [] });
  });

  it("the read's window holds as for the listing: an entry received before it is not returned", async () => {
    const { adapter, ids } = await mailboxOf(3);
    expect((await adapter.readSession(seat, Date.now() + 60_000, ids[0])).entries).toEqual([]);
    expect((await adapter.readSession(seat, 0, ids[0])).entries).toHaveLength(1);
  });
});
