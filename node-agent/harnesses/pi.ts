/**
 * Pi seats through a live Pi control link: RPC mode for sessions this agent launched, or the
 * Clankie Pi extension's socket for a Pi TUI in a pane (same commands). Busy seats take
 * `prompt` with streamingBehavior steer|followUp, so a turn that ends in between still gets
 * the message exactly once; the user message_start event carrying our text is the delivery.
 */
import { contentFingerprint } from "../../shared/fingerprint.js";
import { AgentResult, SeatKind, SeatStatus } from "../../shared/verdicts.js";
import type { MonotonicClock, ProofFact } from "../proofs/proof.js";
import type { HarnessAdapter, InputCapabilities, NativeWrite, NativeWriteResult, SeatRecord, SeatSnapshot, SessionEntry, SessionRead, StopResult } from "./adapter.js";
import type { PiEvent, PiLink } from "./pi-link.js";

/** Finds the live link for a seat: launched RPC children by name, extension sockets by control. */
export interface PiLinks {
  get(seat: SeatRecord): Promise<PiLink | undefined>;
}

export interface PiAdapterOptions {
  clock: MonotonicClock;
  links: PiLinks;
  requestTimeoutMs?: number;
  /** How long an idle seat's write waits to see its message start. */
  startWaitMs?: number;
}

interface PiState {
  isStreaming: boolean;
  sessionId: string;
  sessionFile?: string;
}

const NO_CAPS: InputCapabilities = { deliveryModes: [], interrupt: false, nextTurnOnly: false };

function userText(e: PiEvent): string | undefined {
  const m = e.message as { role?: string; content?: unknown; customType?: string } | undefined;
  if (!m || (m.role !== "user" && m.role !== "custom")) return undefined;
  if (typeof m.content === "string") return m.content;
  if (!Array.isArray(m.content)) return undefined;
  return (m.content as { type?: string; text?: string }[]).filter((c) => c.type === "text").map((c) => c.text ?? "").join("");
}

export class PiAdapter implements HarnessAdapter {
  readonly kind = SeatKind.Pi;
  private readonly timeoutMs: number;
  private readonly startWaitMs: number;
  private readonly lastState = new Map<string, PiState>();
  /** Messages this agent saw Pi start, per seat: the live event stream is the only place Pi shows them. */
  private readonly seen = new Map<string, SessionEntry[]>();
  private seq = 0;
  /** Set by the agent for Pi TUIs running the Clankie extension (pi-extension-link.ts). */
  discover: HarnessAdapter["discover"];

  constructor(private readonly options: PiAdapterOptions) {
    this.timeoutMs = options.requestTimeoutMs ?? 5000;
    this.startWaitMs = options.startWaitMs ?? 10_000;
  }

  private nextId(what: string): string {
    return `clankie-${what}-${++this.seq}`;
  }

  private async state(link: PiLink): Promise<PiState | string> {
    const r = await link.request({ type: "get_state" }, this.nextId("state"), this.timeoutMs);
    if (r.kind !== "ok") return r.kind === "refused" ? r.error : r.detail;
    return { isStreaming: r.data.isStreaming === true, sessionId: String(r.data.sessionId ?? ""), sessionFile: typeof r.data.sessionFile === "string" ? r.data.sessionFile : undefined };
  }

  async inspect(seat: SeatRecord): Promise<{ snapshot: SeatSnapshot; proofs: ProofFact[] }> {
    const link = await this.options.links.get(seat);
    const refuse = (outcome: "refuted" | "unknown", status: SeatStatus, detail: string) => ({
      snapshot: { status, occupantId: seat.occupantId, inputCapabilities: NO_CAPS },
      proofs: [{ kind: "pi_control", outcome, detail, completedAtMs: this.options.clock.nowMs() }],
    });
    if (!link?.isOpen) return refuse("refuted", SeatStatus.Offline, "no live Pi control link for this seat");
    const s = await this.state(link);
    if (typeof s === "string") return refuse("unknown", SeatStatus.Unknown, `get_state failed: ${s}`);
    const expected = (seat.control as { sessionId?: string } | undefined)?.sessionId;
    if (expected && s.sessionId !== expected) return refuse("refuted", SeatStatus.Unknown, `the link now serves session ${s.sessionId}, not ${expected}`);
    this.lastState.set(seat.name, s);
    return {
      snapshot: {
        status: s.isStreaming ? SeatStatus.Working : SeatStatus.Idle,
        occupantId: seat.occupantId,
        // Steer only means something while a turn runs; follow_up (queue) always works; abort interrupts.
        inputCapabilities: { deliveryModes: s.isStreaming ? ["steer", "queue"] : ["queue"], interrupt: true, nextTurnOnly: false },
      },
      proofs: [{ kind: "pi_control", outcome: "proven", detail: `Pi session ${s.sessionId} is ${s.isStreaming ? "streaming" : "idle"}`, completedAtMs: this.options.clock.nowMs() }],
    };
  }

  async write(seat: SeatRecord, message: NativeWrite): Promise<NativeWriteResult> {
    const link = await this.options.links.get(seat);
    const before = this.lastState.get(seat.name);
    if (!link?.isOpen || !before) return { result: AgentResult.NotSent, reason: "pi_unreachable", detail: "no live Pi control link; nothing was sent" };
    const behaviour = message.mode === "steer" ? "steer" : "followUp";
    let started: (() => void) | undefined;
    let queuedAs: string | undefined;
    const startedP = new Promise<void>((resolve) => (started = resolve));
    const off = link.onEvent((e) => {
      if (e.type === "message_start" && userText(e) === message.text) {
        this.record(seat.name, message);
        started?.();
      }
      if (e.type === "queue_update") {
        const q = e as { steering?: string[]; followUp?: string[] };
        if (q.steering?.includes(message.text)) queuedAs = "steering";
        else if (q.followUp?.includes(message.text)) queuedAs = "followUp";
      }
    });
    try {
      // Our delivery id is the command id: Pi's answer is matched by it, never by position.
      const r = await link.request({ type: "prompt", message: message.text, streamingBehavior: behaviour }, `clankie-${message.deliveryId}`, this.timeoutMs);
      if (r.kind === "not_sent") return { result: AgentResult.NotSent, reason: "pi_unreachable", detail: r.detail };
      if (r.kind === "lost") return { result: AgentResult.Unconfirmed, reason: "response_lost", detail: `the prompt was written but Pi's answer was lost (${r.detail}); not resent` };
      if (r.kind === "refused") return { result: AgentResult.NotSent, reason: "refused_by_pi", detail: `Pi refused the prompt: ${r.error}` };
      const receipt = `${before.sessionId}#clankie-${message.deliveryId}`;
      if (before.isStreaming) {
        const how = queuedAs ? ` (Pi's ${queuedAs} queue shows it)` : "";
        return behaviour === "steer"
          ? { result: AgentResult.Steered, nativeReceiptId: receipt, detail: `accepted as steer${how}; joins after the current tool calls` }
          : { result: AgentResult.Queued, nativeReceiptId: receipt, detail: `queued_until_turn_end: accepted as follow-up${how}` };
      }
      const didStart = await Promise.race([startedP.then(() => true), new Promise<boolean>((r2) => setTimeout(() => r2(false), this.startWaitMs))]);
      return didStart
        ? { result: AgentResult.Delivered, nativeReceiptId: receipt, detail: "Pi started a turn with it (user message_start)" }
        : { result: AgentResult.Queued, nativeReceiptId: receipt, detail: "accepted by Pi; not yet seen starting" };
    } finally {
      // Keep listening for a queued message's start, so readSession can show it later.
      if (before.isStreaming) {
        const offLater = link.onEvent((e) => {
          if (e.type === "message_start" && userText(e) === message.text) {
            this.record(seat.name, message);
            offLater();
          }
        });
      }
      off();
    }
  }

  private record(seatName: string, message: NativeWrite): void {
    const list = this.seen.get(seatName) ?? [];
    if (list.some((e) => e.deliveryId === message.deliveryId)) return;
    list.push({ deliveryId: message.deliveryId, nativeReceiptId: `clankie-${message.deliveryId}`, contentFingerprint: contentFingerprint(message.text), atMs: Date.now() });
    this.seen.set(seatName, list);
  }

  async readSession(seat: SeatRecord, sinceMs: number): Promise<SessionRead> {
    const link = await this.options.links.get(seat);
    const s = link?.isOpen ? await this.state(link) : "no live link";
    return {
      occupantId: seat.occupantId,
      status: typeof s === "string" ? SeatStatus.Unknown : s.isStreaming ? SeatStatus.Working : SeatStatus.Idle,
      entries: (this.seen.get(seat.name) ?? []).filter((e) => e.atMs >= sinceMs),
      // Pi keeps no message ids: only what this agent saw start is known, so the read is never complete.
      complete: false,
    };
  }

  async stop(seat: SeatRecord): Promise<StopResult> {
    const link = await this.options.links.get(seat);
    if (!link?.isOpen) return { result: "unavailable", detail: "no live Pi control link" };
    const before = await this.state(link);
    if (typeof before === "string") return { result: "uncertain", detail: before };
    if (!before.isStreaming) return { result: "already_finished", detail: "Pi was not streaming" };
    const r = await link.request({ type: "abort" }, this.nextId("abort"), this.timeoutMs);
    if (r.kind === "not_sent") return { result: "unavailable", detail: r.detail };
    if (r.kind !== "ok") return { result: "uncertain", detail: r.kind === "refused" ? r.error : r.detail };
    const after = await this.state(link);
    if (typeof after !== "string" && !after.isStreaming) return { result: "stopped", detail: "aborted; Pi is idle" };
    return { result: "uncertain", detail: "abort accepted but Pi was not seen idle" };
  }
}
