/**
 * Rule 42 (issue 16, its last item): the fence keeps Pi's `nativeMessageId` and
 * `nativeSessionPath`. A real Pi TUI (pinned version) keeps a session file; the node agent
 * discovers it through a relay in front of the Clankie extension socket that can lose Pi's
 * answer (kit/pi-lossy-proxy.ts). Proven here against Pi's own session file:
 * - a delivered message's receipt carries the exact session entry id Pi gave it, and the
 *   recorded path is the session file holding that entry with the text;
 * - after a lost answer, reconcile settles the receipt by that entry id, read from the file
 *   at the recorded path; the same delivery recorded under another entry id or another file
 *   is not settled (the receipt's columns are set so in the journal to show the check);
 * - a user message with the same text under another entry id (the owner typing it into the
 *   pane) does not settle an original Pi never got (rule 30: content never substitutes).
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliveryReceipts } from "../../controller/db/schema.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt } from "../kit/cli.js";
import { ownerOf } from "../kit/owner.js";
import { requireHarness } from "./kit/harness-bin.js";
import { startPiPane, type PiPane } from "./kit/pi-pane.js";
import { startPiLossyProxy, type PiLossyProxy } from "./kit/pi-lossy-proxy.js";
import { prepareWorkerReportStore, startWorkerReportFleet, type WorkerReportFleet } from "./kit/worker-report-fleet.js";

const bin = requireHarness("pi");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Line = {
  type?: string;
  id?: string;
  customType?: string;
  data?: { deliveryId?: string; entryId?: string };
  message?: { role?: string; content?: unknown };
};

function sessionLines(path: string): Line[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Line];
      } catch {
        return [];
      }
    });
}

function textOf(l: Line): string {
  const c = l.message?.content;
  if (typeof c === "string") return c;
  return Array.isArray(c)
    ? (c as { type?: string; text?: string }[])
        .filter((x) => x.type === "text")
        .map((x) => x.text ?? "")
        .join("")
    : "";
}

/** User-message entries in Pi's own session file whose text is `text`. */
const userEntries = (path: string, text: string) =>
  sessionLines(path).filter((l) => l.type === "message" && l.message?.role === "user" && textOf(l) === text);

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, tries = 300): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.runIf(bin)("rule 42: Pi's fence keeps the native session entry id and the session file", () => {
  let mock: MockAnthropicServer;
  let fleet: WorkerReportFleet;
  let pane: PiPane | undefined;
  let proxy: PiLossyProxy | undefined;
  let seat: { id: string; name: string };
  let sessionDir = "";
  let owner: ReturnType<typeof ownerOf>;
  /** message_seat, sent again only after a definite not-sent refusal of a stale or unanswered proof (machine load). */
  const send = async (text: string) => {
    let body = (await fleet.lead.call("message_seat", { seat: seat.name, message: text })).structuredContent!;
    for (
      let i = 0;
      i < 100 && body.outcome === "undelivered" && ["proof_stale", "proof_unknown"].includes(String(body.reason));
      i++
    ) {
      await sleep(200);
      body = (await fleet.lead.call("message_seat", { seat: seat.name, message: text })).structuredContent!;
    }
    return body;
  };
  const receipt = async (id: string) => (await owner.receipts()).find((r) => r.deliveryId === id);
  const sessionFile = () =>
    readdirSync(sessionDir, { recursive: true })
      .map(String)
      .find((f) => f.endsWith(".jsonl"));

  beforeAll(async () => {
    assertBuilt();
    mock = await startMockAnthropicServer();
    const store = await prepareWorkerReportStore();
    sessionDir = join(store.stateDir, "pi-sessions");
    const piSocketDir = join(store.stateDir, "pi-own-sockets");
    pane = startPiPane({
      bin: bin!,
      root: join(store.stateDir, "pi-seat"),
      mockUrl: mock.url,
      agentStateDir: store.agentStateDir,
      workerTools: false,
      sessionDir,
      socketDir: piSocketDir,
    });
    const sock = await until("the Pi extension socket", () => {
      const f = existsSync(piSocketDir) ? readdirSync(piSocketDir).find((x) => /^pi-\d+\.sock$/.test(x)) : undefined;
      return f && existsSync(join(piSocketDir, f.replace(".sock", ".token"))) ? f : undefined;
    });
    proxy = await startPiLossyProxy({
      piSocketDir,
      agentSocketDir: join(store.agentStateDir, "pi", "sockets"),
      piPid: Number(/\d+/.exec(sock)![0]),
    });
    fleet = await startWorkerReportFleet(store, mock, pane.tmuxSocket);
    owner = ownerOf(fleet.controller.statusUrl, fleet.controller.ownerToken);
    seat = await fleet.seat("pi");
  });
  afterAll(async () => {
    mock?.release();
    await fleet?.close();
    await proxy?.close();
    pane?.close();
    await mock?.close();
  });

  it("rule 42: a delivered message's receipt carries the exact entry id Pi's own session file holds at the recorded path", async () => {
    const text = `fenced hello ${randomUUID()}`;
    const sent = await fleet.message(seat.name, text);
    const r = await receipt(String(sent.deliveryId));
    expect(r?.nativeMessageId).toMatch(/^[0-9a-f]{8}$/);
    expect(r?.nativeSessionPath.startsWith(sessionDir)).toBe(true);
    await mock.waitForRequest(text);
    // Pi writes its file once a reply exists: then the recorded path holds exactly that entry, with our text.
    const entries = await until("the entry in Pi's session file", () =>
      userEntries(r!.nativeSessionPath, text).length ? userEntries(r!.nativeSessionPath, text) : undefined,
    );
    expect(entries.map((e) => e.id)).toEqual([r!.nativeMessageId]);
    // The file itself binds our delivery id to that entry (the extension's clankie-delivery entry).
    expect(
      sessionLines(r!.nativeSessionPath)
        .filter((l) => l.customType === "clankie-delivery" && l.data?.deliveryId === sent.deliveryId)
        .map((l) => l.data?.entryId),
    ).toEqual([r!.nativeMessageId]);
    expect(mock.userMessagesContaining(text)).toBe(1);
  });

  it("rule 42: after Pi's answer is lost, reconcile settles the receipt by that entry id, read from the session file; never resent", async () => {
    const text = `answer lost ${randomUUID()}`;
    proxy!.arm(text, "answer");
    const lost = await send(text);
    expect(lost, JSON.stringify(lost)).toMatchObject({ outcome: "unconfirmed" });
    const id = String(lost.deliveryId);
    await mock.waitForRequest(text);
    const file = join(sessionDir, sessionFile()!);
    const [entry] = await until("Pi's entry for the lost message", () =>
      userEntries(file, text).length ? userEntries(file, text) : undefined,
    );
    // The fence kept both even though the answer was lost: the extension named the entry before the answer timed out.
    expect(await receipt(id)).toMatchObject({
      state: "unconfirmed",
      nativeMessageId: entry!.id,
      nativeSessionPath: file,
    });
    // The same delivery under any other entry id, or in any other session file, is not the original (rules 30, 42).
    const db = fleet.controller.database.db;
    await db.update(deliveryReceipts).set({ nativeMessageId: "00000000" }).where(eq(deliveryReceipts.id, id));
    const wrongId = (await fleet.lead.call("reconcile_seat_call", { deliveryId: id })).structuredContent!;
    expect(wrongId, JSON.stringify(wrongId)).toMatchObject({
      outcome: "unconfirmed",
      sessionCheck: expect.stringContaining(`under entry ${entry!.id}, not the recorded 00000000`),
    });
    await db
      .update(deliveryReceipts)
      .set({ nativeMessageId: entry!.id, nativeSessionPath: `${file}.other` })
      .where(eq(deliveryReceipts.id, id));
    const wrongFile = (await fleet.lead.call("reconcile_seat_call", { deliveryId: id })).structuredContent!;
    expect(wrongFile, JSON.stringify(wrongFile)).toMatchObject({
      outcome: "unconfirmed",
      sessionCheck: expect.stringContaining(`not the recorded ${file}.other`),
    });
    await db.update(deliveryReceipts).set({ nativeSessionPath: file }).where(eq(deliveryReceipts.id, id));
    const rec = await until(
      "reconcile to find it",
      async () => {
        const body = (await fleet.lead.call("reconcile_seat_call", { deliveryId: id })).structuredContent!;
        return body.outcome === "delivered" ? body : undefined;
      },
      100,
    );
    expect(rec).toMatchObject({ outcome: "delivered", deliveryId: id, nativeReceiptId: entry!.id });
    expect(await receipt(id)).toMatchObject({ state: "delivered", nativeReceiptId: entry!.id });
    expect(proxy!.forwardedPrompts.filter((p) => p === text)).toHaveLength(1);
    expect(mock.userMessagesContaining(text)).toBe(1);
  });

  it("rule 42 and rule 30: the same text in Pi's session under another entry id, with no binding to the delivery, does not settle an original Pi never got", async () => {
    const text = `never reached pi ${randomUUID()}`;
    proxy!.arm(text, "prompt");
    const lost = await send(text);
    expect(lost, JSON.stringify(lost)).toMatchObject({ outcome: "unconfirmed" });
    const id = String(lost.deliveryId);
    // The owner types the very same text into the pane: Pi stores it under its own entry id.
    execFileSync("/usr/bin/tmux", ["-S", pane!.tmuxSocket, "send-keys", "-t", "pi", "-l", text]);
    await sleep(300);
    execFileSync("/usr/bin/tmux", ["-S", pane!.tmuxSocket, "send-keys", "-t", "pi", "Enter"]);
    await mock.waitForRequest(text);
    const file = join(sessionDir, sessionFile()!);
    const [typed] = await until("the typed message in Pi's session file", () =>
      userEntries(file, text).length ? userEntries(file, text) : undefined,
    );
    expect(typed!.id).toMatch(/^[0-9a-f]{8}$/);
    const rec = (await fleet.lead.call("reconcile_seat_call", { deliveryId: id })).structuredContent!;
    // Not delivered: the typed entry is not bound to this delivery, so the read proves nothing either way.
    expect(rec, JSON.stringify(rec)).toMatchObject({
      outcome: "unconfirmed",
      deliveryId: id,
      sessionCheck: expect.stringContaining("could not be read"),
    });
    expect(rec.nativeReceiptId).toBeUndefined();
    expect((await receipt(id))?.state).toBe("unconfirmed");
    expect(proxy!.forwardedPrompts).not.toContain(text);
  });
});
