/**
 * Peers between two real harness seats (rules 27–28 and 49, scenarios 23–24; issue 13 part 3):
 * two real Pi TUIs on two machines, each in its own tmux server watched by its own node agent.
 * The sender's Pi offers message_peer through the worker tools extension; the lead asks it to
 * message the other Pi, and the mock model answers with the tool call. Covered: a peer send
 * that reaches the other model once; an answer lost after delivery holds the pane's one peer
 * claim, and the next, different text reconciles it and goes out in the same call carrying
 * it as `previous`; while an original is unresolved a different text waits and nothing is
 * sent; the recipient gone ends that reconciliation as `unconfirmed` (recipient_gone), never
 * resent.
 */
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AddSeatRequestSchema, SetPeerMessagesRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { SeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import {
  startMockAnthropicServer,
  type MockAnthropicServer,
  type RecordedRequest,
} from "../fixtures/mock-anthropic-server.js";
import { assertBuilt } from "../kit/cli.js";
import { ownerOf } from "../kit/owner.js";
import { startAgentProcess, type AgentProcess } from "../kit/agent-process.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { requireHarness } from "./kit/harness-bin.js";
import { startPiPane, type PiPane } from "./kit/pi-pane.js";
import { prepareWorkerReportStore, startWorkerReportFleet, type WorkerReportFleet } from "./kit/worker-report-fleet.js";

const bin = requireHarness("pi");
/** "peer to SEAT: TEXT" from the lead → the model calls message_peer{seat: SEAT, text: TEXT}. */
const PEER = /^peer to (\S+): (.*)$/;

function peerAsk(r: RecordedRequest): { seat: string; text: string } | undefined {
  const m = PEER.exec(r.latestUserText.split("\n").find((l) => PEER.test(l)) ?? "");
  return m ? { seat: m[1]!, text: m[2]! } : undefined;
}

describe("peers between two real Pi seats on two machines", () => {
  let mock: MockAnthropicServer;
  let fleet: WorkerReportFleet;
  let senderPane: PiPane;
  let recipientPane: PiPane;
  let far: AgentProcess;
  let sender: { id: string; name: string };
  let recipient: { id: string; name: string };
  const peerClaims = () => {
    const dir = join(fleet.agentStateDir, "worker", "peer-claims");
    return existsSync(dir) ? readdirSync(dir) : [];
  };
  /** The lead asks the sender to message SEAT; resolves with message_peer's answer to the model. */
  const askPeer = async (seat: string, text: string): Promise<Record<string, unknown>> => {
    const before = new Set(mock.requests);
    await fleet.message(sender.id, `peer to ${seat}: ${text}`);
    for (let i = 0; i < 900; i++) {
      const r = mock.requests.find((x) => !before.has(x) && peerAsk(x)?.text === text && x.turnToolResults.length > 0);
      if (r) return JSON.parse(r.turnToolResults.at(-1)!.match(/\{.*\}/s)?.[0] ?? "{}") as Record<string, unknown>;
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error(`message_peer never answered for ${text}`);
  };
  const reached = (text: string) => mock.requests.filter((r) => r.latestUserText.includes(text) && !peerAsk(r)).length;

  beforeAll(async () => {
    if (!bin) throw new Error("pi is not installed in .harnesses/pi: run `npm run harnesses:install -- pi`");
    assertBuilt();
    mock = await startMockAnthropicServer({
      toolUse: (r) => {
        const p = peerAsk(r);
        return p && r.toolNames.includes("message_peer") ? { name: "message_peer", input: p } : undefined;
      },
    });
    const store = await prepareWorkerReportStore();
    senderPane = startPiPane({
      bin,
      root: join(store.stateDir, "sender-pi"),
      mockUrl: mock.url,
      agentStateDir: store.agentStateDir,
      workerTools: true,
    });
    // A frozen recipient agent leaves a send uncertain soon, not after the default 20 s.
    fleet = await startWorkerReportFleet(store, mock, senderPane.tmuxSocket, { deliverTimeoutMs: 6000 });
    const farState = join(store.stateDir, "far");
    mkdirSync(farState, { recursive: true });
    recipientPane = startPiPane({
      bin,
      root: join(store.stateDir, "recipient-pi"),
      mockUrl: mock.url,
      agentStateDir: join(farState, "agent"),
      workerTools: false,
    });
    far = await startAgentProcess({
      controllerUrl: fleet.controller.agentUrl,
      stateDir: farState,
      machine: "far",
      joinToken: await fleet.controller.issueJoinToken("far"),
      extraArgs: ["--pane-host", "tmux", "--tmux-socket", recipientPane.tmuxSocket],
    });
    sender = await fleet.seat("pi");
    for (let i = 0; i < 900 && !recipient; i++) {
      const seats = ((await fleet.lead.call("list_seats", {})).structuredContent?.seats ?? []) as {
        id: string;
        name: string;
        kind: string;
        inputCapabilities: { deliveryModes: string[] };
      }[];
      recipient = seats.find(
        (s) => s.kind === "pi" && s.id.startsWith("far/") && s.inputCapabilities.deliveryModes.length > 0,
      )!;
      if (!recipient) await new Promise((r) => setTimeout(r, 100));
    }
    expect(recipient).toBeDefined();
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).owner.addSeat(
      create(AddSeatRequestSchema, { machine: "workbox", name: "peerbox", kind: SeatKind.MAILBOX }),
    );
    expect(
      (
        await ownerOf(fleet.controller.url, fleet.controller.ownerToken).owner.setPeerMessages(
          create(SetPeerMessagesRequestSchema, { enabled: true }),
        )
      ).enabled,
    ).toBe(true);
  });
  afterAll(async () => {
    mock?.release();
    await far?.stop();
    await fleet?.close();
    senderPane?.close();
    recipientPane?.close();
    await mock?.close();
  });

  it("scenario 23: the sender's Pi messages the other machine's Pi once, under its peer conversation, with no lead authority", async () => {
    const sent = await askPeer(recipient.id, "hello other pi");
    expect(sent).toMatchObject({ outcome: "delivered", seat: recipient.id, deliveryId: expect.any(String) });
    for (let i = 0; i < 300 && reached("hello other pi") === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(reached("hello other pi")).toBe(1);
    expect(peerClaims()).toEqual([]);
    // Filed under the sender's peer conversation, not a lead's: it carries no owner authority.
    const receipt = (await ownerOf(fleet.controller.url, fleet.controller.ownerToken).receipts()).find(
      (r) => r.deliveryId === sent.deliveryId,
    );
    expect(receipt?.conversationId).toBe(`peer:${sender.id}`);
  });

  it("rule 49: an answer lost after delivery holds the one peer claim; the next different text reconciles it and goes out in the same call with it as previous", async () => {
    const cut = fleet.faults.arm((c) => c.op === "peer_send" && c.text === "delivered but answer lost", "answer");
    const lost = await askPeer(recipient.id, "delivered but answer lost");
    await cut;
    expect(lost).toMatchObject({ outcome: "uncertain", deliveryId: expect.any(String) });
    expect(peerClaims()).toHaveLength(1);
    const next = await askPeer(recipient.id, "the next peer text");
    expect(next).toMatchObject({
      outcome: "delivered",
      previous: [{ deliveryId: lost.deliveryId, state: "delivered" }],
    });
    expect(next.deliveryId).not.toBe(lost.deliveryId);
    expect(peerClaims()).toEqual([]);
    for (let i = 0; i < 300 && reached("the next peer text") === 0; i++) await new Promise((r) => setTimeout(r, 100));
    // The original reached the other model once, and was never resent.
    expect(reached("delivered but answer lost")).toBe(1);
    expect(reached("the next peer text")).toBe(1);
  });

  it("rules 28 and 49: while an original is unresolved a different text waits (one claim per sender pane); the recipient gone ends it as unconfirmed, never resent", async () => {
    // The recipient's agent is frozen: the controller sends and gets no answer, so the send is uncertain.
    far.freeze();
    const stuck = await askPeer(recipient.id, "to a frozen agent");
    expect(stuck).toMatchObject({ outcome: "uncertain", deliveryId: expect.any(String) });
    expect(peerClaims()).toHaveLength(1);
    const waiting = await askPeer("workbox/peerbox", "a different text meanwhile");
    expect(waiting).toMatchObject({ outcome: "uncertain", deliveryId: stuck.deliveryId });
    const peerbox = () => new MailboxStore(join(fleet.agentStateDir, "mailboxes")).list("peerbox").entries;
    expect(peerbox()).toEqual([]);

    // The recipient goes: its Pi ends and its agent comes back without it.
    recipientPane.close();
    await far.restart();
    for (let i = 0; i < 300; i++) {
      const seats = ((await fleet.lead.call("list_seats", {})).structuredContent?.seats ?? []) as { id: string }[];
      if (!seats.some((s) => s.id === recipient.id)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const after = await askPeer("workbox/peerbox", "after the recipient went");
    expect(after).toMatchObject({
      outcome: "delivered",
      seat: "workbox/peerbox",
      previous: [{ deliveryId: stuck.deliveryId, state: "unconfirmed", reason: "recipient_gone" }],
    });
    expect(peerClaims()).toEqual([]);
    expect(peerbox().map((e) => e.text)).toEqual(["after the recipient went"]);
    expect(reached("to a frozen agent")).toBe(0);
  });
});
