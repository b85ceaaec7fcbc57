/**
 * A mailbox seat's session read (node-agent/mailbox/session-read.ts): the same answer as reading
 * every file (inventory scenario 9: any unreadable file is a gap, however it became unreadable),
 * reading only files new or changed since the last read, and giving the agent's event loop back
 * while it reads a large mailbox.
 */
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { MailboxStore } from "../../../../node-agent/mailbox/store.js";
import { CHUNK, MailboxSessionReader } from "../../../../node-agent/mailbox/session-read.js";
import { tempDir } from "../../../kit/test-db.js";

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  return { ...real, readFileSync: vi.fn(real.readFileSync) };
});
const reads = () => vi.mocked(fs.readFileSync).mock.calls.filter(([p]) => String(p).endsWith(".json")).length;

async function mailbox(n: number): Promise<{ store: MailboxStore; reader: MailboxSessionReader; ids: string[] }> {
  const store = new MailboxStore(tempDir("mbx-session"));
  store.create("w");
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    ids.push(id);
    await store.append("w", { deliveryId: id, text: `m${i}`, conversationId: "c" });
  }
  return { store, reader: new MailboxSessionReader(store), ids };
}

/** What reading every file says, as the session read's entries. */
function everyFile(store: MailboxStore) {
  const { entries, unreadable } = store.list("w");
  return {
    entries: entries.map(({ deliveryId, seq, receivedAtMs, contentFingerprint }) => ({
      deliveryId,
      seq,
      receivedAtMs,
      contentFingerprint,
    })),
    unreadable: unreadable.sort(),
  };
}

describe("a mailbox seat's session read", () => {
  it("scenario 9: a file unreadable at this read is a gap, whether it is new or was readable and damaged in place since", async () => {
    const { store, reader, ids } = await mailbox(5);
    expect(await reader.read("w")).toEqual(everyFile(store));
    // A new damaged file, after the first read.
    const broken = join(store.dir("w"), "broken.json");
    fs.writeFileSync(broken, "{ not json");
    expect((await reader.read("w")).unreadable).toEqual(["broken.json"]);
    fs.rmSync(broken);
    expect((await reader.read("w")).unreadable).toEqual([]);
    // An entry parsed at an earlier read, damaged in place (same inode, same size): read again, unreadable.
    const damaged = join(store.dir("w"), `${ids[2]}.json`);
    const size = fs.statSync(damaged).size;
    fs.writeFileSync(damaged, "x".repeat(size));
    const read = await reader.read("w");
    expect(read.unreadable).toEqual([`${ids[2]}.json`]);
    expect(read.entries.map((e) => e.deliveryId)).toEqual([ids[0], ids[1], ids[3], ids[4]]);
    expect(read).toEqual(everyFile(store));
  });

  it("reads only the files new or changed since its last read, and drops the removed", async () => {
    const { store, reader, ids } = await mailbox(40);
    let before = reads();
    await reader.read("w");
    expect(reads() - before).toBe(40);
    before = reads();
    expect(await reader.read("w")).toEqual(everyFile(store));
    const unchanged = reads() - before - 40; // everyFile read all 40 itself
    expect(unchanged).toBe(0);
    await store.append("w", { deliveryId: randomUUID(), text: "new", conversationId: "c" });
    fs.rmSync(join(store.dir("w"), `${ids[0]}.json`));
    before = reads();
    const read = await reader.read("w");
    expect(reads() - before).toBe(1);
    expect(read).toEqual(everyFile(store));
    expect(read.entries.map((e) => e.deliveryId)).not.toContain(ids[0]);
  });

  it("gives the event loop back while it reads a large mailbox: the agent's other seats are served between its chunks", async () => {
    const { reader } = await mailbox(3 * CHUNK + 5);
    let turns = 0;
    let done = false;
    const tick = () => {
      if (done) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const read = await reader.read("w");
    done = true;
    expect(read.entries).toHaveLength(3 * CHUNK + 5);
    // One turn of the loop at least at each of its three chunk boundaries; a synchronous read gives none.
    expect(turns).toBeGreaterThanOrEqual(3);
  });
});
