/** Fault points for the crash-window and lost-answer suites: inert unless CLANKIE_FAULT (or a test) names one. */

/** Points where a crash-window suite parks the pipeline until the process is killed or stops. */
export type ParkPoint = "hang_after_admit" | "hang_after_agent_reply" | "hang_after_hire_admit";
/** Points where a suite drops an answer that did arrive, exactly as a link cut after the agent acted would. */
export type DropPoint = "drop_hire_answer" | "drop_question_answer";
export type FaultPoint = ParkPoint | DropPoint;
export const FAULT_POINTS: readonly FaultPoint[] = [
  "hang_after_admit",
  "hang_after_agent_reply",
  "hang_after_hire_admit",
  "drop_hire_answer",
  "drop_question_answer",
];

/** A worker-link call that reaches the controller's gateway: a report, a peer send, or their reconciles. */
export interface WorkerCall {
  op: "worker_send" | "worker_status" | "peer_send" | "peer_status";
  /** The message's id (deliveryId) the call carries. */
  id: string;
  /** The message text, for sends. */
  text?: string | undefined;
}
/** Where a cut link loses a worker-link call: before the controller acts on it, or its answer after it did. */
export type WorkerLoss = "request" | "answer";

/** Injected fault points: `at` resolves when the pipeline may go on; `drops` says an answer is lost (production: neither). */
export interface FaultPoints {
  at(point: ParkPoint): Promise<void>;
  drops?(point: DropPoint): boolean;
  /** Loses this one worker-link call as a cut link would (asked once per call); production: never. */
  loses?(call: WorkerCall): WorkerLoss | undefined;
}

/** Parks until the controller stops, or drops an answer: the fault points for the crash-window suites. */
export function parkingFaults(point: FaultPoint | undefined, signal: AbortSignal): FaultPoints | undefined {
  if (!point) return undefined;
  return {
    drops: (p) => p === point,
    at: (p) =>
      p !== point || signal.aborted
        ? Promise.resolve()
        : new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true })),
  };
}
