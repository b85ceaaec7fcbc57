/**
 * Pi seats through a live Pi control link: the Clankie Pi extension's socket in a Pi TUI in
 * a pane. Only a link proven to be that pane's own Pi counts (rule 3): a headless
 * `pi --mode rpc` child proves no control of an interactive session and is refused. Busy
 * seats take `prompt` with streamingBehavior steer|followUp, so a turn that ends in between
 * still gets the message exactly once; the user message_start event carrying our text is the
 * delivery. Capabilities are exactly what the extension's hello offers (rule 42, ADR 0008).
 * The fence keeps Pi's own session entry id for the message and the session file (rule 42):
 * the extension reports both (`clankie_entry`), and readSession reads that file.
 */
import { contentFingerprint } from "../../../shared/fingerprint.js";
import { AgentResult, SeatKind, SeatStatus } from "../../../shared/verdicts.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import type {
  CannotWork,
  HarnessAdapter,
  InputCapabilities,
  NativeWrite,
  NativeWriteResult,
  SeatRecord,
  SeatSnapshot,
  SessionEntry,
  SessionRead,
  StopResult,
} from "../adapter.js";
import type { PiEvent, PiLink } from "./link.js";
import type { PaneHost } from "../../panes/pane-host.js";
import { readPiSessionFile } from "./session-file.js";

/** Finds the live link for a seat: launched RPC children by name, extension sockets by control. */
export interface PiLinks {
  get(seat: SeatRecord): Promise<PiLink | undefined>;
}

export interface PiAdapterOptions {
  clock: MonotonicClock;
  links: PiLinks;
  /** Re-proves that the seat's pane still runs the Pi process serving the link. */
  paneHost?: PaneHost | undefined;
  requestTimeoutMs?: number;
  /** How long an idle seat's write waits to see its message start. */
  startWaitMs?: number;
  /** How long a started message's write waits for Pi's entry id (rule 42). */
  entryWaitMs?: number;
}

interface PiState {
  isStreaming: boolean;
  sessionId: string;
  sessionFile?: string;
  /** Pi's own answer: why it would refuse a turn, if it would (an older extension says nothing). */
  cannotWork?: CannotWork | undefined;
}

/** Pi refuses a turn without a model, or without a key for it (its "No API key found…"): so does the seat. */
export function piCannotWork(data: Record<string, unknown>): CannotWork | undefined {
  if (!("model" in data)) return undefined;
  // Pi's stand-in when nothing is configured is provider "unknown" (its auth guidance's UNKNOWN_PROVIDER).
  if (typeof data.model !== "string" || !data.model || data.model.startsWith("unknown/"))
    return {
      reason: "no_model",
      detail: `Pi has no model selected (get_state model: ${JSON.stringify(data.model ?? null)}); Pi refuses every turn`,
    };
  if (data.modelAuth === false)
    return {
      reason: "no_api_key",
      detail: `Pi has no API key for its model ${data.model} (get_state modelAuth: false); Pi refuses every turn ("No API key found")`,
    };
  return undefined;
}

const NO_CAPS: InputCapabilities = { deliveryModes: [], interrupt: false, nextTurnOnly: false };

function userText(e: PiEvent): string | undefined {
  const m = e.message as { role?: string; content?: unknown; customType?: string } | undefined;
  if (!m || (m.role !== "user" && m.role !== "custom")) return undefined;
  if (typeof m.content === "string") return m.content;
  if (!Array.isArray(m.content)) return undefined;
  return (m.content as { type?: string; text?: string }[])
    .filter((c) => c.type === "text")
    .map((c) => c.text ?? "")
    .join("");
}

function within(p: Promise<void>, ms: number): Promise<boolean> {
  return Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
}

function capabilitiesFrom(
  origin: Extract<PiLink["origin"], { kind: "extension" }>,
  streaming: boolean,
): InputCapabilities {
  const modes: ("steer" | "queue")[] = [];
  if (streaming && origin.deliverAs.includes("steer")) modes.push("steer");
  if (origin.deliverAs.includes("followUp")) modes.push("queue");
  return { deliveryModes: modes, interrupt: origin.commands.includes("abort"), nextTurnOnly: false };
}

export class PiAdapter implements HarnessAdapter {
  readonly kind = SeatKind.Pi;
  private readonly timeoutMs: number;
  private readonly startWaitMs: number;
  private readonly entryWaitMs: number;
  private readonly lastState = new Map<string, PiState>();
  /** Messages the extension bound to Pi's entries, per seat, for what Pi has not yet written to its file. */
  private readonly seen = new Map<string, SessionEntry[]>();
  private seq = 0;
  /** Set by the agent for Pi TUIs running the Clankie extension (pi-extension-link.ts). */
  discover: HarnessAdapter["discover"];

  constructor(private readonly options: PiAdapterOptions) {
    this.timeoutMs = options.requestTimeoutMs ?? 5000;
    this.startWaitMs = options.startWaitMs ?? 10_000;
    this.entryWaitMs = options.entryWaitMs ?? 5_000;
  }

  private nextId(what: string): string {
    return `clankie-${what}-${++this.seq}`;
  }

  private async state(link: PiLink): Promise<PiState | string> {
    const r = await link.request({ type: "get_state" }, this.nextId("state"), this.timeoutMs);
    if (r.kind !== "ok") return r.kind === "refused" ? r.error : r.detail;
    return {
      isStreaming: r.data.isStreaming === true,
      sessionId: String(r.data.sessionId ?? ""),
      sessionFile: typeof r.data.sessionFile === "string" ? r.data.sessionFile : undefined,
      cannotWork: piCannotWork(r.data),
    };
  }

  async inspect(seat: SeatRecord): Promise<{ snapshot: SeatSnapshot; proofs: ProofFact[] }> {
    const link = await this.options.links.get(seat);
    const refuse = (outcome: "refuted" | "unknown", status: SeatStatus, detail: string) => ({
      snapshot: { status, occupantId: seat.occupantId, inputCapabilities: NO_CAPS },
      proofs: [{ kind: "pi_control", outcome, detail, completedAtMs: this.options.clock.nowMs() }],
    });
    if (!link?.isOpen) return refuse("refuted", SeatStatus.Offline, "no live Pi control link for this seat");
    // Rule 3: only control of the pane's own interactive Pi counts. A headless RPC link proves none.
    const origin = link.origin;
    if (origin.kind !== "extension")
      return refuse(
        "refuted",
        SeatStatus.Unknown,
        "a headless pi --mode rpc link does not prove control of an interactive session; it is not a seat",
      );
    const control = seat.kind === SeatKind.Pi ? seat.control : undefined;
    const piPid = control?.piPid;
    if (piPid === undefined || origin.pid !== piPid)
      return refuse(
        "refuted",
        SeatStatus.Unknown,
        `the link is served by Pi ${origin.pid}, not by the seat's Pi ${piPid ?? "(none recorded)"}`,
      );
    const inPane = await this.paneRuns(seat, piPid);
    if (inPane !== undefined && !inPane.ok)
      return refuse(
        inPane.outcome,
        inPane.outcome === "refuted" ? SeatStatus.Offline : SeatStatus.Unknown,
        inPane.detail,
      );
    const s = await this.state(link);
    if (typeof s === "string") return refuse("unknown", SeatStatus.Unknown, `get_state failed: ${s}`);
    const expected = control?.sessionId;
    if (expected && s.sessionId !== expected)
      return refuse("refuted", SeatStatus.Unknown, `the link now serves session ${s.sessionId}, not ${expected}`);
    this.lastState.set(seat.name, s);
    return {
      snapshot: {
        status: s.isStreaming ? SeatStatus.Working : SeatStatus.Idle,
        occupantId: seat.occupantId,
        // Exactly what the live link said it offers (rule 42): steer only while a turn runs (it joins
        // that turn), followUp as queue, abort as interrupt. A Pi that refuses every turn offers nothing.
        inputCapabilities: s.cannotWork ? NO_CAPS : capabilitiesFrom(origin, s.isStreaming),
        ...(s.cannotWork ? { cannotWork: s.cannotWork } : {}),
      },
      proofs: [
        {
          kind: "pi_control",
          outcome: "proven",
          detail: `Pi session ${s.sessionId} is ${s.isStreaming ? "streaming" : "idle"}`,
          completedAtMs: this.options.clock.nowMs(),
        },
      ],
    };
  }

  /** The seat's pane still runs `pid` in its foreground; undefined when there is no pane or host to ask. */
  private async paneRuns(
    seat: SeatRecord,
    pid: number,
  ): Promise<{ ok: true } | { ok: false; outcome: "refuted" | "unknown"; detail: string } | undefined> {
    if (!seat.pane || !this.options.paneHost) return undefined;
    try {
      const info = await this.options.paneHost.processInfo(seat.pane.paneId);
      return info.foregroundProcesses.some((p) => p.pid === pid)
        ? { ok: true }
        : { ok: false, outcome: "refuted", detail: `pane ${seat.pane.paneId} no longer runs Pi ${pid}` };
    } catch (e) {
      return { ok: false, outcome: "unknown", detail: `pane host: ${(e as Error).message}` };
    }
  }

  async write(seat: SeatRecord, message: NativeWrite): Promise<NativeWriteResult> {
    const link = await this.options.links.get(seat);
    const before = this.lastState.get(seat.name);
    if (link?.origin.kind !== "extension")
      return {
        result: AgentResult.NotSent,
        reason: "no_native_control",
        detail: "a headless pi --mode rpc link is not a seat's control; nothing was sent",
      };
    if (!link?.isOpen || !before)
      return {
        result: AgentResult.NotSent,
        reason: "pi_unreachable",
        detail: "no live Pi control link; nothing was sent",
      };
    const behaviour = message.mode === "steer" ? "steer" : "followUp";
    let started: (() => void) | undefined;
    let bound: (() => void) | undefined;
    let entryId: string | undefined;
    let queuedAs: string | undefined;
    let mayBind = false;
    const startedP = new Promise<void>((resolve) => (started = resolve));
    const boundP = new Promise<void>((resolve) => (bound = resolve));
    const off = link.onEvent((e) => {
      if (e.type === "message_start" && userText(e) === message.text) started?.();
      // The extension matched Pi's entry to our delivery id by object identity (worker/pi-entry-binding.ts).
      if (e.type === "clankie_entry" && e.deliveryId === message.deliveryId && typeof e.entryId === "string") {
        entryId = e.entryId;
        this.record(seat.name, message, entryId);
        bound?.();
      }
      if (e.type === "queue_update") {
        const q = e as { steering?: string[]; followUp?: string[] };
        if (q.steering?.includes(message.text)) queuedAs = "steering";
        else if (q.followUp?.includes(message.text)) queuedAs = "followUp";
      }
    });
    try {
      // Our delivery id is the command id: Pi's answer is matched by it, never by position.
      const r = await link.request(
        { type: "prompt", message: message.text, streamingBehavior: behaviour, deliveryId: message.deliveryId },
        `clankie-${message.deliveryId}`,
        this.timeoutMs,
      );
      if (r.kind === "not_sent") return { result: AgentResult.NotSent, reason: "pi_unreachable", detail: r.detail };
      mayBind = r.kind !== "refused";
      // Rule 42: the session file that will hold it; its entry id once Pi has appended the entry.
      const path = before.sessionFile ? { nativeSessionPath: before.sessionFile } : {};
      if (r.kind === "lost") {
        // Still unconfirmed (the answer is what was lost), but the fence keeps where to look and, if Pi already said, which entry.
        const known = entryId ? { nativeMessageId: entryId } : {};
        return {
          result: AgentResult.Unconfirmed,
          reason: "response_lost",
          ...path,
          ...known,
          detail: `the prompt was written but Pi's answer was lost (${r.detail}); not resent`,
        };
      }
      if (r.kind === "refused")
        return { result: AgentResult.NotSent, reason: "refused_by_pi", detail: `Pi refused the prompt: ${r.error}` };
      const receipt = `${before.sessionId}#clankie-${message.deliveryId}`;
      // The answer's disposition: Pi's own (its input event on 1.x, or an RPC answer: handled, queued,
      // started), else Pi's state when it took the message; the last inspect's may be stale.
      const disposition = r.data.disposition;
      const from = r.data.dispositionFrom === "input_event" ? " (Pi's own input event)" : "";
      if (disposition === "handled")
        // An extension command or input handler consumed it: no run starts, so no message_start will come.
        return {
          result: AgentResult.Delivered,
          nativeReceiptId: receipt,
          ...path,
          detail: "Pi reports the prompt handled (an extension command or input handler took it; no run started)",
        };
      const streaming =
        disposition === "steered" || disposition === "queued"
          ? true
          : disposition === "started"
            ? false
            : before.isStreaming;
      if (streaming) {
        const how = queuedAs ? ` (Pi's ${queuedAs} queue shows it)` : "";
        return behaviour === "steer"
          ? {
              result: AgentResult.Steered,
              nativeReceiptId: receipt,
              ...path,
              detail: `accepted as steer${how}${from}; joins after the current tool calls`,
            }
          : {
              result: AgentResult.Queued,
              nativeReceiptId: receipt,
              ...path,
              detail: `queued_until_turn_end: accepted as follow-up${how}${from}`,
            };
      }
      const didStart = await within(startedP, this.startWaitMs);
      if (didStart) await within(boundP, this.entryWaitMs);
      const entry = entryId ? { nativeMessageId: entryId } : {};
      return didStart
        ? {
            result: AgentResult.Delivered,
            nativeReceiptId: receipt,
            ...path,
            ...entry,
            detail: `Pi started a turn with it${from} (user message_start${entryId ? `, session entry ${entryId}` : ""})`,
          }
        : {
            result: AgentResult.Queued,
            nativeReceiptId: receipt,
            ...path,
            detail: "accepted by Pi; not yet seen starting",
          };
    } finally {
      // Keep listening for a queued (or unanswered) message's start and entry, so readSession can show it later.
      if (!entryId && mayBind) {
        const offLater = link.onEvent((e) => {
          if (e.type === "clankie_entry" && e.deliveryId === message.deliveryId && typeof e.entryId === "string") {
            this.record(seat.name, message, e.entryId);
            offLater();
          }
        });
      }
      off();
    }
  }

  /**
   * A message the extension bound to Pi's entry id (rule 42). Only that binding counts: a user
   * message_start with the same text may be anyone's (the owner typing it), so text never records one (rule 30).
   */
  private record(seatName: string, message: NativeWrite, entryId: string): void {
    const list = this.seen.get(seatName) ?? [];
    if (list.some((e) => e.deliveryId === message.deliveryId)) return;
    list.push({
      deliveryId: message.deliveryId,
      nativeReceiptId: entryId,
      contentFingerprint: contentFingerprint(message.text),
      atMs: Date.now(),
    });
    this.seen.set(seatName, list);
  }

  async readSession(seat: SeatRecord, sinceMs: number): Promise<SessionRead> {
    const link = await this.options.links.get(seat);
    const s = link?.isOpen ? await this.state(link) : "no live link";
    const status = typeof s === "string" ? SeatStatus.Unknown : s.isStreaming ? SeatStatus.Working : SeatStatus.Idle;
    const seen = (this.seen.get(seat.name) ?? []).filter((e) => e.atMs >= sinceMs);
    const sessionPath = typeof s === "string" ? this.lastState.get(seat.name)?.sessionFile : s.sessionFile;
    // Rule 42: Pi's own session file is the record; what this agent saw start only fills in what Pi has
    // not flushed yet (Pi writes the file once a reply exists). A message still queued in Pi is in
    // neither, so the read is never complete: absence here is not proof.
    const file = sessionPath ? await readPiSessionFile(sessionPath) : undefined;
    const fromFile = file && typeof file !== "string" ? file.entries.filter((e) => e.atMs >= sinceMs) : [];
    return {
      occupantId: seat.occupantId,
      status,
      entries: [...fromFile, ...seen.filter((e) => !fromFile.some((f) => f.deliveryId === e.deliveryId))],
      complete: false,
      ...(sessionPath && file && typeof file !== "string" ? { sessionPath } : {}),
    };
  }

  async stop(seat: SeatRecord): Promise<StopResult> {
    const link = await this.options.links.get(seat);
    if (!link?.isOpen) return { result: "unavailable", detail: "no live Pi control link" };
    if (link.origin.kind !== "extension" || !link.origin.commands.includes("abort"))
      return { result: "unsupported", detail: "this Pi link does not offer abort for an interactive session" };
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
