/**
 * A hired worker's informational question, the controller's half (issue 13 part 4, rules 35
 * and 39): the agent saw it on the seat's own session; it is filed for the EXACT hiring
 * conversation of the seat's current occupant — never the last conversation that messaged the
 * seat, never a default one. A seat no conversation hired (or another occupant than the
 * hired one) gets no delegation: the question stays with the owner in the pane. It is filed as
 * a worker report (id derived from the native binding, so a re-sent question is one copy), so
 * the lead reads it with worker_reports and answers with message_seat{questionAnswer}.
 * A worker may ask in the very turn its hire's brief started, before the hire is decided (its
 * seat or occupant not recorded yet): while a hire is launching on that machine, the question
 * waits for it, at most HIRE_WAIT_MS, like reports do (controller/reports/worker-reports.ts).
 */
import { createHash } from "node:crypto";
import { and, eq, inArray } from "drizzle-orm";
import { hireReceipts, seats, workerReports } from "../db/schema.js";
import { HireState } from "../hire/bodies.js";
import type { Db } from "../db/open.js";
import { seatId } from "../../shared/ids.js";
import { hiredBy } from "../hire/hiring-conversation.js";

export const MAX_QUESTION_CHARS = 32_768;
/** How long a question waits for a hire launching on its machine (bounded, as reports wait). */
export const HIRE_WAIT_MS = 10_000;

export interface IncomingQuestion {
  seatName: string;
  occupantId: string;
  threadId: string;
  turnId: string;
  itemId: string;
  requestId: string;
  questions: {
    id: string;
    header: string;
    question: string;
    isOther: boolean;
    options: { label: string; description: string }[];
  }[];
  askedAtMs: number;
}

export type FileOutcome =
  | { filed: true; questionId: string }
  | { filed: false; reason: "unknown_seat" | "occupant_changed" | "not_hired" | "too_long"; detail: string };

/** The report id of one native question: the same binding always names the same report. */
export function questionIdOf(seat: string, q: Pick<IncomingQuestion, "threadId" | "turnId" | "itemId">): string {
  return `question-${createHash("sha256").update(`clankie-question\0${seat}\0${q.threadId}\0${q.turnId}\0${q.itemId}`).digest("hex").slice(0, 32)}`;
}

/** What the lead reads: the question, its binding, and the exact call that answers it. */
export function renderQuestion(seat: string, q: IncomingQuestion): string {
  const lines = [
    `Question from seat ${seat} (requestId ${q.requestId}; thread ${q.threadId}, turn ${q.turnId}, call ${q.itemId}):`,
  ];
  for (const x of q.questions) {
    lines.push(`- [${x.id}] ${x.header ? `${x.header}: ` : ""}${x.question}`);
    for (const o of x.options) lines.push(`    * ${o.label}${o.description ? ` — ${o.description}` : ""}`);
    if (x.isOther) lines.push("    * (a free answer is allowed)");
  }
  const example = Object.fromEntries(q.questions.map((x) => [x.id, { answers: ["…"] }]));
  lines.push(
    `Answer with message_seat ${JSON.stringify({ seat, questionAnswer: { requestId: q.requestId, answers: example } })}`,
  );
  return lines.join("\n");
}

async function hireLaunching(db: Db, machine: string): Promise<boolean> {
  const [row] = await db
    .select({ id: hireReceipts.id })
    .from(hireReceipts)
    .where(
      and(eq(hireReceipts.machine, machine), inArray(hireReceipts.state, [HireState.Reserved, HireState.Launching])),
    )
    .limit(1);
  return row !== undefined;
}

export async function fileWorkerQuestion(
  db: Db,
  machine: string,
  q: IncomingQuestion,
  now: Date,
  o: { hireWaitMs?: number } = {},
): Promise<FileOutcome> {
  const deadline = Date.now() + (o.hireWaitMs ?? HIRE_WAIT_MS);
  for (;;) {
    const r = await fileOnce(db, machine, q, now);
    // Only what a launching hire could still change is waited for; past the bound it stays with the owner.
    if (r.filed || r.reason === "too_long" || Date.now() >= deadline || !(await hireLaunching(db, machine))) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
}

async function fileOnce(db: Db, machine: string, q: IncomingQuestion, now: Date): Promise<FileOutcome> {
  const id = seatId(machine, q.seatName);
  const [row] = await db
    .select({ occupantId: seats.occupantId, present: seats.present })
    .from(seats)
    .where(eq(seats.id, id));
  if (!row?.present) return { filed: false, reason: "unknown_seat", detail: `the controller has no seat ${id}` };
  if (row.occupantId !== q.occupantId)
    return {
      filed: false,
      reason: "occupant_changed",
      detail: `seat ${id} now has another occupant than the one that asked`,
    };
  const hire = await hiredBy(db, id, q.occupantId);
  if (!hire)
    return {
      filed: false,
      reason: "not_hired",
      detail: `no conversation hired seat ${id}'s occupant: its questions stay with the owner in the pane`,
    };
  const text = renderQuestion(id, q);
  if (text.length > MAX_QUESTION_CHARS)
    return {
      filed: false,
      reason: "too_long",
      detail: `the question renders to ${text.length} characters (at most ${MAX_QUESTION_CHARS}); nothing was filed`,
    };
  const questionId = questionIdOf(id, q);
  await db
    .insert(workerReports)
    .values({
      id: questionId,
      seatId: id,
      conversationId: hire.conversationId,
      unadopted: false,
      text,
      state: "pending",
      createdAt: new Date(q.askedAtMs),
      acceptedAt: now,
    })
    .onConflictDoNothing();
  return { filed: true, questionId };
}
