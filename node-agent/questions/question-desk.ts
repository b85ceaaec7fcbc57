/**
 * The agent's desk for workers' questions (issue 13 part 4): one question watcher per seat whose
 * harness plugin watches questions (Codex: its thread on the agent's own app-server connection;
 * OpenCode: its loopback server). A question it sees is filed with the controller
 * (SubmitWorkerQuestion), which routes it to the exact hiring conversation or keeps it with the
 * owner; the lead's answer comes back through AnswerQuestion to the same watcher. Claude seats
 * ask through their hook (harnesses/claude/questions.ts).
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import {
  type AgentGatewayService,
  SubmitWorkerQuestionRequestSchema,
} from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import type { Logger } from "../../shared/logger.js";
import type { SeatRecord } from "../harnesses/adapter.js";
import type { SeatBook } from "../seats/seat-book.js";
import type { AnswerOutcome, QuestionAnswers, WorkerQuestion } from "../harnesses/codex/questions.js";
import type { HarnessPlugin, QuestionWatching, SeatQuestionWatcher } from "../harnesses/plugin.js";
import { HARNESSES } from "../harnesses/registry.js";
import { QuestionLedger } from "./question-ledger.js";
import {
  ClaudeQuestionBoard,
  type ClaudeAsk,
  type HookLine,
  type ReconcileOutcome,
} from "../harnesses/claude/questions.js";

export interface QuestionLink {
  gateway: Pick<Client<typeof AgentGatewayService>, "submitWorkerQuestion">;
  machine: string;
  instanceId: string;
}

interface Desk {
  occupantId: string;
  watcher?: SeatQuestionWatcher | undefined;
  attaching?: Promise<void> | undefined;
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

  constructor(
    private readonly o: {
      seats: SeatBook;
      ledgerDir: string;
      link: QuestionLink;
      logger: Logger;
      /** The harnesses whose question watching is used; the registry's list unless a test passes its own. */
      harnesses?: readonly HarnessPlugin[];
    },
  ) {
    this.ledger = new QuestionLedger(o.ledgerDir);
    this.claude = new ClaudeQuestionBoard(this.ledger, (q) => this.file(q));
  }

  /** A Claude seat's AskUserQuestion, from its hook (already proved to run in the seat's pane). */
  askFromClaude(seat: SeatRecord, callerPids: ReadonlySet<number>, ask: ClaudeAsk, line: HookLine): Promise<void> {
    return this.claude.ask(seat, callerPids, ask, line);
  }

  /** The seat's harness's question watching, when it has one and this seat can be watched. */
  private watchingOf(seat: SeatRecord): QuestionWatching | undefined {
    const watching = (this.o.harnesses ?? HARNESSES).find((h) => h.kind === seat.kind)?.questions;
    return watching?.watchable(seat) ? watching : undefined;
  }

  /** Attaches watchers to new watchable seats and drops those whose seat or occupant is gone. */
  sync(): Promise<void> {
    const live = new Map(this.o.seats.all().flatMap((s) => (this.watchingOf(s) ? [[s.name, s] as const] : [])));
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
    const watching = this.watchingOf(seat);
    if (!watching) {
      this.desks.delete(seat.name);
      return;
    }
    const w = await watching.attach(seat, this.ledger);
    if (!w.ok || this.desks.get(seat.name) !== desk) {
      if (w.ok) w.watcher.close();
      else this.o.logger.warn(`question watcher: ${w.problem}`, { seat: seat.name, error: w.message });
      if (this.desks.get(seat.name) === desk) this.desks.delete(seat.name);
      return;
    }
    desk.watcher = w.watcher;
    w.watcher.onQuestion((q) => void this.file(q));
    await w.watcher.start?.();
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
      questions: q.questions.map((x) => ({
        id: x.id,
        header: x.header,
        question: x.question,
        isOther: x.isOther,
        options: x.options ?? [],
      })),
      askedUnixMs: BigInt(Date.now()),
    };
    try {
      const r = await this.o.link.gateway.submitWorkerQuestion(create(SubmitWorkerQuestionRequestSchema, init), {
        timeoutMs: FILE_TIMEOUT_MS,
      });
      this.filed.push({ seat: q.seat, requestId: q.requestId, filed: r.filed, reason: r.reason });
      return { filed: r.filed, reason: r.reason };
    } catch (e) {
      // Not filed: the question stays with the owner in the pane, who can always answer it.
      this.filed.push({ seat: q.seat, requestId: q.requestId, filed: false, reason: "controller_unreachable" });
      this.o.logger.warn("question not filed", { seat: q.seat, error: (e as Error).message });
      return { filed: false, reason: "controller_unreachable" };
    }
  }

  async answer(
    seatName: string,
    occupantId: string,
    requestId: string,
    answers: QuestionAnswers,
  ): Promise<AnswerOutcome | { result: "refused"; reason: "unknown_seat" | "occupant_changed" }> {
    if (this.claude.has(seatName, requestId)) return this.claude.answer(seatName, occupantId, requestId, answers);
    const d = this.desks.get(seatName);
    if (!d?.watcher) return { result: "refused", reason: "unknown_seat" };
    if (d.occupantId !== occupantId) return { result: "refused", reason: "occupant_changed" };
    return d.watcher.answer(requestId, answers);
  }

  /** Re-reads an earlier answer's native receipt and settles what it proves; sends nothing. */
  async reconcile(
    seatName: string,
    occupantId: string,
    requestId: string,
  ): Promise<ReconcileOutcome | { result: "refused"; reason: "unknown_seat"; detail: string }> {
    if (this.claude.has(seatName, requestId)) return this.claude.reconcile(seatName, occupantId, requestId);
    const d = this.desks.get(seatName);
    if (!d?.watcher)
      return { result: "refused", reason: "unknown_seat", detail: `no question of seat ${seatName} is known here` };
    if (d.occupantId !== occupantId) return { result: "refused", reason: "occupant_changed" };
    return d.watcher.reconcile(requestId);
  }

  watching(seatName: string): boolean {
    return this.desks.get(seatName)?.watcher !== undefined;
  }

  private drop(name: string): void {
    const d = this.desks.get(name);
    d?.watcher?.close();
    this.desks.delete(name);
  }

  close(): void {
    for (const name of [...this.desks.keys()]) this.drop(name);
  }
}
