import { randomUUID } from "node:crypto";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MailboxStore } from "../../../../node-agent/mailbox/store.js";
import { tempDir } from "../../../kit/test-db.js";

describe("mailbox.MailboxStore", () => {
  it("a repeated delivery id is never written twice (native idempotence)", async () => {
    const s = new MailboxStore(tempDir("mbx"));
    s.create("w");
    const id = randomUUID();
    const a = await s.append("w", { deliveryId: id, text: "hi", conversationId: "c" });
    const b = await s.append("w", { deliveryId: id, text: "hi", conversationId: "c" });
    expect(a.replayed).toBe(false);
    expect(b.replayed).toBe(true);
    expect(b.entry.seq).toBe(a.entry.seq);
    expect(s.list("w").entries).toHaveLength(1);
  });
  it("concurrent appends get dense, ordered sequence numbers", async () => {
    const s = new MailboxStore(tempDir("mbx"));
    s.create("w");
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        s.append("w", { deliveryId: randomUUID(), text: `m${i}`, conversationId: "c" }),
      ),
    );
    expect(s.list("w").entries.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });
  it("reading advances a cursor; peeking does not", async () => {
    const s = new MailboxStore(tempDir("mbx"));
    s.create("w");
    await s.append("w", { deliveryId: randomUUID(), text: "one", conversationId: "c" });
    expect(s.readUnread("w", { peek: true }).entries).toHaveLength(1);
    expect(s.readUnread("w", { peek: false }).entries).toHaveLength(1);
    expect(s.readUnread("w", { peek: false }).entries).toHaveLength(0);
    await s.append("w", { deliveryId: randomUUID(), text: "two", conversationId: "c" });
    expect(s.readUnread("w", { peek: false }).entries.map((e) => e.text)).toEqual(["two"]);
  });
  it("an unreadable entry is reported, not hidden, and leaves no temp files behind", async () => {
    const root = tempDir("mbx");
    const s = new MailboxStore(root);
    s.create("w");
    await s.append("w", { deliveryId: randomUUID(), text: "ok", conversationId: "c" });
    writeFileSync(join(root, "w", `${randomUUID()}.json`), "{torn");
    const listed = s.list("w");
    expect(listed.entries).toHaveLength(1);
    expect(listed.unreadable).toHaveLength(1);
    expect(readdirSync(join(root, "w")).some((f) => f.endsWith(".tmp"))).toBe(false);
  });
  it("a new writer (an agent restart) continues the sequence after the highest stored entry", async () => {
    const root = tempDir("mbx");
    const s = new MailboxStore(root);
    s.create("w");
    await s.append("w", { deliveryId: randomUUID(), text: "a", conversationId: "c" });
    await s.append("w", { deliveryId: randomUUID(), text: "b", conversationId: "c" });
    const c = await new MailboxStore(root).append("w", { deliveryId: randomUUID(), text: "c", conversationId: "c" });
    expect(c.entry.seq).toBe(3);
  });
  it("refuses a delivery id that is not a uuid", async () => {
    const s = new MailboxStore(tempDir("mbx"));
    s.create("w");
    await expect(s.append("w", { deliveryId: "../../etc/passwd", text: "x", conversationId: "c" })).rejects.toThrow(
      /uuid/,
    );
  });
});
