/**
 * The agent's desk for workers' questions (issue 13 part 4): one question watcher per Codex
 * seat with a known app-server endpoint and thread, on the agent's own connection (the
 * owner's TUI keeps its own). A question it sees is filed with the controller
 * (SubmitWorkerQuestion), which routes it to the exact hiring conversation or keeps it with
 * the owner; the lead's answer comes back through AnswerQuestion to the same watcher. OpenCode
 * seats get one watcher each on their own loopback server (opencode-questions.ts); Claude seats
 * ask through their hook (claude-questions.ts).
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { AgentGatewayService, SubmitWorkerQuestionRequestSchema } from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { SeatKind } from "../../shared/verdicts.js";
import type { Logger } from "../../shared/logger.js";
import type { SeatRecord } from "../harnesses/adapter.js";
import { CodexConnection } from "../harnesses/codex/connection.js";
import type { SeatBook } from "../seats/seat-book.js";
import { CodexQuestionWatcher, type AnswerOutcome, type QuestionAnswers, type WorkerQuestion } from "../harnesses/codex/questions.js";
import { QuestionLedger } from "./question-ledger.js";
import { ClaudeQuestionBoard, type ClaudeAsk, type HookLine, type ReconcileOutcome } from "../harnesses/claude/questions.js";
import { OpenCodeQuestionWatcher, openCodeTarget, type OpenCodeWatchOptions } from "../harnesses/opencode/questions.js";

export interface QuestionLink {
  gateway: Pick<Client<typeof AgentGatewayService>, "submitWorkerQuestion">;
  machine: string;
  instanceId: string;
}

interface Desk {
  occupantId: string;
  watcher?: CodexQuestionWatcher | OpenCodeQuestionWatcher | undefined;
  connection?: CodexConnection | undefined;
  attaching?: Promise<void> | undefined;
}

/** Where a Codex seat's questions can be watched: its app-server and thread, when discovery found both. */
function codexTarget(seat: SeatRecord): { endpoint: string; threadId: string } | undefined {
  if (seat.kind !== SeatKind.Codex) return undefined;
  const c = seat.control;
  return typeof c?.endpoint === "string" && typeof c.threadId === "string" ? { endpoint: c.endpoint, threadId: c.threadId } : undefined;
}

const RETRY_MS = 5_000;
/** The controller may hold a question up to 10 s while the seat's hire is still launching. */
const FILE_TIMEOUT_MS = 15_000;

export class QuestionDesk {
  private readonly desks = new Map<string, Desk>();
  private readonly ledger: QuestionLedger;
  private readonly claude: ClaudeQuestionBoard;
  /** When each seat's last attach was tried: a thread not resumable yet is retried at most every RETRY_MS. */
  private readonly tried = new Map<string, number>();
  /** What the controller said about each filed question (by requestId), for diagnostics and tests. */
  readonly filed: { seat: string; requestId: string; filed: boolean; reason: string }[] = [];

  constructor(private readonly o: { seats: SeatBook; ledgerDir: string; link: QuestionLink; logger: Logger; openCode?: OpenCodeWatchOptions }) {
    this.ledger = new QuestionLedger(o.ledgerDir);
    this.claude = new ClaudeQuestionBoard(this.ledger, (q) => this.file(q));
  }

  /** A Claude seat's AskUserQuestion, from its hook (already proved to run in the seat's pane). */
  askFromClaude(seat: SeatRecord, callerPids: ReadonlySet<number>, ask: ClaudeAsk, line: HookLine): Promise<void> {
    return this.claude.ask(seat, callerPids, ask, line);
  }

  /** Attaches watchers to new Codex and OpenCode seats and drops those whose seat or occupant is gone. */
  sync(): Promise<void> {
    const live = new Map(this.o.seats.all().flatMap((s) => (codexTarget(s) || openCodeTarget(s) ? [[s.name, s] as const] : [])));
    for (const [name, d] of this.desks) {
      if (live.get(name)?.occupantId !== d.occupantId) this.drop(name);
    }
    for (const name of this.tried.keys()) if (!live.has(name)) this.tried.delete(name);
    const pending: Promise<void>[] = [];
    for (const [name, seat] of live) {
      const d = this.desks.get(name);
      if (d?.watcher || d?.attaching) continue;
      if (Date.now() - (this.tried.get(name) ?? -Infinity) < RETRY_MS) continue;
      this.tried.set(name, Date.now());
      const desk: Desk = { occupantId: seat.occupantId };
      desk.attaching = this.attach(seat, desk).finally(() => (desk.attaching = undefined));
      this.desks.set(name, desk);
      pending.push(desk.attaching);
    }
    return Promise.all(pending).then(() => undefined);
  }

  private async attach(seat: SeatRecord, desk: Desk): Promise<void> {
    if (seat.kind === SeatKind.OpenCode) return this.attachOpenCode(seat, desk);
    const t = codexTarget(seat)!;
    const opened = await CodexConnection.open(t.endpoint, { clientName: "clankie_questions" });
    if (!opened.ok) {
      this.o.logger.warn("question watcher: app-server unreachable", { seat: seat.name, error: opened.message });
      this.desks.delete(seat.name);
      return;
    }
    const w = await CodexQuestionWatcher.attach(opened.connection, { seat: seat.name, occupantId: seat.occupantId, paneId: seat.pane?.paneId, threadId: t.threadId }, this.ledger);
    if (!w.ok || this.desks.get(seat.name) !== desk) {
      opened.connection.close();
      if (!w.ok) this.o.logger.warn("question watcher: thread not resumable", { seat: seat.name, error: w.message });
      if (this.desks.get(seat.name) === desk) this.desks.delete(seat.name);
      return;
    }
    desk.connection = opened.connection;
    desk.watcher = w.watcher;
    w.watcher.onQuestion((q) => void this.file(q));
  }

  private async attachOpenCode(seat: SeatRecord, desk: Desk): Promise<void> {
    const w = await OpenCodeQuestionWatcher.attach(seat, this.ledger, this.o.openCode);
    if (!w.ok || this.desks.get(seat.name) !== desk) {
      if (w.ok) w.watcher.close();
      else this.o.logger.warn("question watcher: OpenCode session unreachable", { seat: seat.name, error: w.message });
      if (this.desks.get(seat.name) === desk) this.desks.delete(seat.name);
      return;
    }
    desk.watcher = w.watcher;
    w.watcher.onQuestion((q) => void this.file(q));
    await w.watcher.poll();
  }

  private async file(q: WorkerQuestion): Promise<{ filed: boolean; reason: string }> {
    const init: MessageInitShape<typeof SubmitWorkerQuestionRequestSchema> = {
      machine: this.o.link.machine,
      instanceId: this.o.link.instanceId,
      seatName: q.seat,
      occupantId: q.occupantId,
      threadId: q.threadId,
      turnId: q.turnId,
      itemId: q.itemId,
      requestId: q.requestId,
      questions: q.questions.map((x) => ({ id: x.id, header: x.header, question: x.question, isOther: x.isOther, options: x.options ?? [] })),
      askedUnixMs: BigInt(Date.now()),
    };
    try {
      const r = await this.o.link.gateway.submitWorkerQuestion(create(SubmitWorkerQuestionRequestSchema, init), { timeoutMs: FILE_TIMEOUT_MS });
      this.filed.push({ seat: q.seat, requestId: q.requestId, filed: r.filed, reason: r.reason });
      return { filed: r.filed, reason: r.reason };
    } catch (e) {
      // Not filed: the question stays with the owner in the pane, who can always answer it.
      this.filed.push({ seat: q.seat, requestId: q.requestId, filed: false, reason: "controller_unreachable" });
      this.o.logger.warn("question not filed", { seat: q.seat, error: (e as Error).message });
      return { filed: false, reason: "controller_unreachable" };
    }
  }

  async answer(seatName: string, occupantId: string, requestId: string, answers: QuestionAnswers): Promise<AnswerOutcome | { result: "refused"; reason: "unknown_seat" | "occupant_changed" }> {
    if (this.claude.has(seatName, requestId)) return this.claude.answer(seatName, occupantId, requestId, answers);
    const d = this.desks.get(seatName);
    if (!d?.watcher) return { result: "refused", reason: "unknown_seat" };
    if (d.occupantId !== occupantId) return { result: "refused", reason: "occupant_changed" };
    return d.watcher.answer(requestId, answers);
  }

  /** Re-reads an earlier answer's native receipt and settles what it proves; sends nothing. */
  async reconcile(seatName: string, occupantId: string, requestId: string): Promise<ReconcileOutcome | { result: "refused"; reason: "unknown_seat"; detail: string }> {
    if (this.claude.has(seatName, requestId)) return this.claude.reconcile(seatName, occupantId, requestId);
    const d = this.desks.get(seatName);
    if (!d?.watcher) return { result: "refused", reason: "unknown_seat", detail: `no question of seat ${seatName} is known here` };
    if (d.occupantId !== occupantId) return { result: "refused", reason: "occupant_changed" };
    return d.watcher instanceof OpenCodeQuestionWatcher ? d.watcher.reconcile(requestId) : d.watcher.reconcileRequest(requestId);
  }

  watching(seatName: string): boolean {
    return this.desks.get(seatName)?.watcher !== undefined;
  }

  private drop(name: string): void {
    const d = this.desks.get(name);
    d?.watcher?.close();
    d?.connection?.close();
    this.desks.delete(name);
  }

  close(): void {
    for (const name of [...this.desks.keys()]) this.drop(name);
  }
}
