/**
 * The agent's local endpoint for workers in panes (message_clankie, rule 48): a unix socket
 * in a 0700 directory of the agent's state. The agent never takes a worker's word for who it
 * is: the kernel names the process at the other end of the connection, and the caller is a
 * seat's worker only when that seat's pane shell is among its ancestors, or, under a Codex
 * app-server, when the thread its call names is that seat's proven thread
 * (worker-attribution.ts). The controller then
 * returns the seat's binding (seat + occupant), and only a message under that binding is sent.
 * One JSON line per request and per answer. A Claude question (`op: "question"`, from its
 * PreToolUse hook) is handed to the question desk with the open connection: its one answer
 * line comes when the hiring lead answers, or a refusal at once (node-agent/questions/).
 */
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import {
  BindWorkerRequestSchema,
  ListFleetSeatsRequestSchema,
  PeerMessageStatusRequestSchema,
  SendPeerMessageRequestSchema,
  SubmitWorkerMessageRequestSchema,
  WorkerMessageStatusRequestSchema,
} from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { isUuid } from "../../shared/ids.js";
import type { Logger } from "../../shared/logger.js";
import { JsonlSplitter } from "../harnesses/pi/link.js";
import type { PaneHost } from "../panes/pane-host.js";
import type { ProofProvider } from "../proofs/provider.js";
import type { SeatBook } from "../seats/seat-book.js";
import type { SeatRecord } from "../harnesses/adapter.js";
import type { ControllerLink } from "../service/controller-link.js";
import { attributeCaller } from "./worker-attribution.js";
import type { QuestionDesk } from "../questions/question-desk.js";
import { hookLine, parseClaudeAsk } from "../harnesses/claude/ask-wire.js";
import type { ClaudeAsk } from "../harnesses/claude/questions.js";

export const WORKER_SOCKET = "worker.sock";
const MAX_LINE = 64 * 1024;
const RPC_TIMEOUT_MS = 10_000;
/** A peer send may wait for the recipient's turn and remote proofs: inside the worker's 50 s (rule 27). */
export const PEER_RPC_TIMEOUT_MS = 48_000;

export interface WorkerEndpointDeps {
  dir: string;
  seats: SeatBook;
  paneHost: PaneHost | undefined;
  proofs: ProofProvider;
  link: ControllerLink;
  logger: Logger;
  /** Workers' questions; absent: a Claude question is refused at once and stays with the owner. */
  questions?: Pick<QuestionDesk, "askFromClaude"> | undefined;
}

type Request =
  | { op: "bind" }
  | { op: "send"; id: string; text: string; binding: string }
  | { op: "status"; id: string; settleUnknown: boolean }
  | { op: "peers"; binding: string }
  | { op: "peer_send"; binding: string; recipient: string; id: string; text: string }
  | { op: "peer_status"; binding: string; id: string }
  | { op: "question"; ask: ClaudeAsk };

const THREAD = /^[A-Za-z0-9-]{1,100}$/;

/** The request, with the Codex thread its tool call came from when the worker named one (codex-call-thread.ts). */
function parse(line: string): (Request & { codexThread?: string | undefined }) | undefined {
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof m !== "object" || m === null) return undefined;
  const req = parseOp(m);
  return req && typeof m.codexThread === "string" && THREAD.test(m.codexThread)
    ? { ...req, codexThread: m.codexThread }
    : req;
}

// Ids leave here in their canonical case (issue 32 item 4): a worker may give one in upper case.
function parseOp(m: Record<string, unknown>): Request | undefined {
  try {
    if (m.op === "bind") return { op: "bind" };
    if (
      m.op === "send" &&
      typeof m.id === "string" &&
      isUuid(m.id) &&
      typeof m.text === "string" &&
      typeof m.binding === "string"
    )
      return { op: "send", id: m.id.toLowerCase(), text: m.text, binding: m.binding };
    if (m.op === "status" && typeof m.id === "string" && isUuid(m.id))
      return { op: "status", id: m.id.toLowerCase(), settleUnknown: m.settleUnknown === true };
    if (m.op === "peers" && typeof m.binding === "string") return { op: "peers", binding: m.binding };
    if (
      m.op === "peer_send" &&
      typeof m.binding === "string" &&
      typeof m.recipient === "string" &&
      typeof m.id === "string" &&
      isUuid(m.id) &&
      typeof m.text === "string"
    )
      return { op: "peer_send", binding: m.binding, recipient: m.recipient, id: m.id.toLowerCase(), text: m.text };
    if (m.op === "peer_status" && typeof m.binding === "string" && typeof m.id === "string" && isUuid(m.id))
      return { op: "peer_status", binding: m.binding, id: m.id.toLowerCase() };
    if (m.op === "question") {
      const ask = parseClaudeAsk(m);
      if (ask) return { op: "question", ask };
    }
  } catch {
    // answered below as a bad request
  }
  return undefined;
}

/** The seat whose pane (or, under a Codex app-server, whose thread) the connection's peer is, proved from the kernel; or why not. */
async function callerSeat(
  deps: WorkerEndpointDeps,
  socket: Socket,
  thread: string | undefined,
): Promise<{ seat: SeatRecord; pids: ReadonlySet<number> } | { reason: string; detail: string }> {
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (fd === undefined || fd < 0)
    return { reason: "unproven_caller", detail: "the connection has no descriptor to prove its peer with" };
  const peer = await deps.proofs.unixConnectionPeer(fd);
  if (!peer.known)
    return { reason: "unproven_caller", detail: `the kernel did not name the caller: ${peer.reason}: ${peer.detail}` };
  if (peer.value.peers.length !== 1)
    return { reason: "unproven_caller", detail: `${peer.value.peers.length} processes hold the other end` };
  return attributeCaller(
    { provider: deps.proofs, paneHost: deps.paneHost, seats: deps.seats.discoveredSeats() },
    peer.value.peers[0]!,
    thread,
  );
}

export async function startWorkerEndpoint(deps: WorkerEndpointDeps): Promise<{ path: string; close(): Promise<void> }> {
  mkdirSync(deps.dir, { recursive: true, mode: 0o700 });
  chmodSync(deps.dir, 0o700);
  const path = join(deps.dir, WORKER_SOCKET);
  // The gateway is read per call: a certificate renewal replaces the client (controller-link.ts).
  const { machine, instanceId } = deps.link;

  const answer = async (
    socket: Socket,
    req: Exclude<Request, { op: "question" }> & { codexThread?: string | undefined },
  ): Promise<Record<string, unknown>> => {
    const who = await callerSeat(deps, socket, req.codexThread);
    if (!("seat" in who)) return { ok: false, definitiveNotSent: true, ...who };
    const seatName = who.seat.name;
    await deps.link.registered;
    if (req.op === "bind") {
      const b = await deps.link.gateway.bindWorker(
        create(BindWorkerRequestSchema, { machine, instanceId, seatName, occupantId: who.seat.occupantId }),
        { timeoutMs: RPC_TIMEOUT_MS },
      );
      return b.bound
        ? { ok: true, seatId: b.seatId, seatName, binding: b.binding }
        : { ok: false, definitiveNotSent: true, reason: b.reason, detail: b.detail };
    }
    if (req.op === "send") {
      const r = await deps.link.gateway.submitWorkerMessage(
        create(SubmitWorkerMessageRequestSchema, {
          machine,
          instanceId,
          seatName,
          binding: req.binding,
          id: req.id,
          text: req.text,
          createdUnixMs: BigInt(Date.now()),
        }),
        { timeoutMs: RPC_TIMEOUT_MS },
      );
      return {
        ok: r.deliveryStage === "stored",
        deliveryStage: r.deliveryStage,
        definitiveNotSent: r.definitiveNotSent,
        reason: r.reason,
        detail: r.detail,
      };
    }
    if (req.op === "peers") {
      const r = await deps.link.gateway.listFleetSeats(
        create(ListFleetSeatsRequestSchema, { machine, instanceId, seatName, binding: req.binding }),
        { timeoutMs: RPC_TIMEOUT_MS },
      );
      return r.allowed
        ? {
            ok: true,
            seats: r.seats.map((x) => ({ seatId: x.seatId, kind: x.kind, title: x.title, status: x.status })),
          }
        : { ok: false, definitiveNotSent: true, reason: r.reason, detail: r.detail };
    }
    if (req.op === "peer_send") {
      const r = await deps.link.gateway.sendPeerMessage(
        create(SendPeerMessageRequestSchema, {
          machine,
          instanceId,
          seatName,
          binding: req.binding,
          recipientSeat: req.recipient,
          id: req.id,
          text: req.text,
        }),
        { timeoutMs: PEER_RPC_TIMEOUT_MS },
      );
      return { ok: true, state: r.state, body: JSON.parse(r.bodyJson) as unknown };
    }
    if (req.op === "peer_status") {
      const r = await deps.link.gateway.peerMessageStatus(
        create(PeerMessageStatusRequestSchema, { machine, instanceId, seatName, binding: req.binding, id: req.id }),
        { timeoutMs: RPC_TIMEOUT_MS },
      );
      return { ok: true, state: r.state, body: JSON.parse(r.bodyJson) as unknown };
    }
    const s = await deps.link.gateway.workerMessageStatus(
      create(WorkerMessageStatusRequestSchema, {
        machine,
        instanceId,
        seatName,
        id: req.id,
        settleUnknown: req.settleUnknown,
      }),
      { timeoutMs: RPC_TIMEOUT_MS },
    );
    return { ok: true, deliveryStage: s.deliveryStage, definitiveNotSent: s.definitiveNotSent, detail: s.detail };
  };

  const serve = (socket: Socket) => {
    let size = 0;
    const reply = (o: unknown) => socket.write(JSON.stringify(o) + "\n");
    const splitter = new JsonlSplitter((line) => {
      const req = parse(line);
      if (!req)
        return reply({
          ok: false,
          definitiveNotSent: true,
          reason: "bad_request",
          detail: "not a bind, send, status, peers, peer_send, peer_status or question request",
        });
      if (req.op === "question") {
        return void askQuestion(deps, socket, req.ask, reply).catch((e: Error) => {
          deps.logger.warn("worker question failed", { error: e.message });
          reply({ ok: false, reason: "internal", detail: e.message });
        });
      }
      answer(socket, req).then(reply, (e: Error) => {
        // The controller may have acted on a send whose answer was lost: the worker must reconcile, not resend.
        deps.logger.warn("worker request failed", { op: req.op, error: e.message });
        reply({
          ok: false,
          definitiveNotSent: req.op === "bind" || req.op === "peers",
          reason: "controller_unreachable",
          detail: e.message,
        });
      });
    });
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => {
      size += d.length;
      if (size > MAX_LINE * 4) return socket.destroy();
      splitter.push(d);
    });
    socket.on("error", () => socket.destroy());
  };

  rmSync(path, { force: true });
  const server: Server = createServer(serve);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  return {
    path,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        rmSync(path, { force: true });
      }),
  };
}

/** A Claude question: proved like any worker call, then held open by the desk until it is answered or refused. */
async function askQuestion(
  deps: WorkerEndpointDeps,
  socket: Socket,
  ask: ClaudeAsk,
  reply: (o: unknown) => void,
): Promise<void> {
  const who = await callerSeat(deps, socket, undefined).catch((e: Error) => ({
    reason: "unproven_caller",
    detail: e.message,
  }));
  if (!("seat" in who)) return reply({ ok: false, ...who });
  if (!deps.questions) return reply({ ok: false, reason: "unsupported", detail: "this agent files no questions" });
  await deps.link.registered;
  await deps.questions.askFromClaude(who.seat, who.pids, ask, hookLine(socket));
}
