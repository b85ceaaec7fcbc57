/**
 * Claude Code seats, through the Clankie channel (an MCP server Claude spawned with the
 * channel opt-in), or, for a session started without it, through the session's own inbox
 * socket (cross-session messaging, 2.1.224+; ADR 0071). The channel's exact authenticated ack
 * of our event id is transport delivery only; the inbox acknowledges nothing at all. Delivery
 * is the transcript's user line carrying our id (channel origin, or a peer line Claude verified
 * came from this process). Neither can steer a running turn: the seat offers [queue] and
 * nextTurnOnly, and explicit Steer is refused before anything is sent.
 */
import { AgentResult, SeatKind, SeatStatus } from "../../../shared/verdicts.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import type { ProofProvider } from "../../proofs/provider.js";
import type { PaneAgentStatus } from "../../panes/pane-host.js";
import type {
  HarnessAdapter,
  NativeWrite,
  NativeWriteResult,
  SeatRecord,
  SeatSnapshot,
  SessionRead,
  StopResult,
} from "../adapter.js";
import { channelHello, pushChannelEvent, type ChannelAddress } from "./channel-client.js";
import { channelPaths } from "./channel-wire.js";
import { readSessionReport, type ClaudeInbox } from "./session-report.js";
import { claudeCannotWork, TranscriptReader } from "./transcript.js";
import { claudeOccupantId, observeClaudeOccupant } from "./occupant.js";
import { liveStatus } from "./status.js";
import { ClaudeWriteTurns } from "./write-turns.js";
import { inboxContent, probeInbox, pushInbox } from "./inbox-client.js";

/**
 * What a Claude seat's `control` holds: where its channel and session reports live, which
 * Claude, and the route in: its Clankie channel (absent `route`, as seats recorded before the
 * inbox), or the session's own inbox socket, named by its SessionStart report.
 */
export interface ClaudeControl {
  channelDir: string;
  reportDir: string;
  claudePid: number;
  route?: "channel" | "inbox";
}

declare module "../adapter.js" {
  interface SeatControls {
    claude: ClaudeControl;
  }
}

export interface ClaudeAdapterOptions {
  clock: MonotonicClock;
  /** Process facts for the occupant check (rule 46); this machine's provider when absent. */
  proofs?: ProofProvider | undefined;
  /** The pane host's view of the seat (Herdr's screen detection); undefined when it has none. */
  paneStatus?: ((seat: SeatRecord) => Promise<PaneAgentStatus | undefined>) | undefined;
  /** The guarded Esc; absent means the seat does not advertise interrupt. */
  stopper?: ((seat: SeatRecord) => Promise<StopResult>) | undefined;
  requestTimeoutMs?: number;
  /** How long an idle seat's write polls the transcript for the exact entry. */
  transcriptWaitMs?: number;
  pollMs?: number;
  /** Recognises a Claude with a live Clankie channel in a pane (claude-discover.ts). */
  discover?: HarnessAdapter["discover"];
}

interface View {
  status: SeatStatus;
  transcriptPath: string;
  sessionId: string;
  hasChannelEvent: boolean;
  /** The session's start (its SessionStart report): queue operations before it are an earlier process's. */
  queueSinceMs: number;
  /** The newest prompt's time in the transcript: the running turn's, for rule 39. */
  promptAtMs: number;
  /** The inbox the session's own hook reported, for an inbox seat. */
  inbox?: ClaudeInbox;
}

/** Leeway for the SessionStart hook, which files its report a moment after Claude started taking input. */
const SESSION_START_LEEWAY_MS = 2000;
/** An idle seat takes a queued event within moments; this long with our event only queued, it waits for a turn to end. */
const QUEUED_GRACE_MS = 1500;

export function claudeControl(seat: SeatRecord): ClaudeControl {
  const c = seat.kind === SeatKind.Claude ? seat.control : undefined;
  if (!c || typeof c.channelDir !== "string" || typeof c.reportDir !== "string" || typeof c.claudePid !== "number")
    throw new Error(`seat ${seat.name} has no Claude channel`);
  return {
    channelDir: c.channelDir,
    reportDir: c.reportDir,
    claudePid: c.claudePid,
    ...(c.route === "inbox" ? { route: "inbox" as const } : {}),
  };
}

export function channelAddress(c: ClaudeControl): ChannelAddress {
  return channelPaths(c.channelDir, c.claudePid);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export { turnFromHooks } from "./status.js";

export class ClaudeAdapter implements HarnessAdapter {
  readonly kind = SeatKind.Claude;
  private readonly transcripts = new TranscriptReader();
  private readonly writeTurns = new ClaudeWriteTurns();
  private readonly views = new Map<string, View>();
  /** Sessions this agent has itself seen take a channel event (VUH-2779: "confirmed by this service"). */
  private readonly provenReceivers = new Set<string>();
  private readonly timeoutMs: number;
  private readonly waitMs: number;
  private readonly pollMs: number;
  readonly discover: HarnessAdapter["discover"];

  constructor(private readonly options: ClaudeAdapterOptions) {
    this.discover = options.discover;
    this.timeoutMs = options.requestTimeoutMs ?? 5000;
    this.waitMs = options.transcriptWaitMs ?? 20_000;
    this.pollMs = options.pollMs ?? 200;
  }

  async inspect(seat: SeatRecord): Promise<{ snapshot: SeatSnapshot; proofs: ProofFact[] }> {
    const refuse = (outcome: "refuted" | "unknown", status: SeatStatus, detail: string) => ({
      snapshot: {
        status,
        occupantId: seat.occupantId,
        inputCapabilities: { deliveryModes: [] as ("queue" | "steer")[], interrupt: false, nextTurnOnly: false },
      },
      proofs: [{ kind: "claude_channel", outcome, detail, completedAtMs: this.options.clock.nowMs() }],
    });
    let control: ClaudeControl;
    try {
      control = claudeControl(seat);
    } catch (e) {
      return refuse("refuted", SeatStatus.Unknown, (e as Error).message);
    }
    // Rule 46: a reused pid or a new session in the same process is another occupant. Its
    // capabilities are cleared and the live occupant is reported, so nothing meant for the
    // recorded one reaches it (deliver.ts refuses a different occupant; discovery re-records it).
    const live = await observeClaudeOccupant(control.claudePid, control.reportDir, this.options.proofs);
    const liveId = claudeOccupantId(live);
    if (liveId !== seat.occupantId) {
      this.views.delete(seat.name);
      const r = refuse(
        "refuted",
        live.alive ? SeatStatus.Unknown : SeatStatus.Offline,
        `the seat's occupant changed: recorded ${seat.occupantId}, now ${liveId}`,
      );
      return { ...r, snapshot: { ...r.snapshot, occupantId: liveId } };
    }
    const pane = this.options.paneStatus?.(seat);
    const report = readSessionReport(control.reportDir, control.claudePid);
    if (control.route === "inbox") {
      // The inbox the session's own SessionStart hook reported (CLAUDE_PID named this Claude), live now.
      if (!report?.inbox)
        return refuse("refuted", SeatStatus.Unknown, "this Claude's SessionStart report names no inbox socket");
      const probe = await probeInbox(report.inbox.socketPath, this.timeoutMs);
      if (!probe.ok) return refuse("refuted", SeatStatus.Offline, probe.detail);
    } else {
      const hello = await channelHello(channelAddress(control), this.timeoutMs);
      if (!hello.ok) return refuse("refuted", SeatStatus.Offline, hello.detail);
      if (hello.claudePid !== control.claudePid)
        return refuse(
          "refuted",
          SeatStatus.Unknown,
          `the channel serves Claude ${hello.claudePid}, not ${control.claudePid}`,
        );
      if (!hello.mcpReady)
        return refuse(
          "refuted",
          SeatStatus.Unknown,
          "Claude has not connected the channel (started without the channel opt-in?)",
        );
    }
    if (!report)
      return refuse(
        "unknown",
        SeatStatus.Unknown,
        "no SessionStart report for this Claude: its transcript cannot be found",
      );
    // The session may have changed between the occupant check and this read.
    if (report.sessionId !== live.sessionId)
      return refuse(
        "refuted",
        SeatStatus.Unknown,
        `Claude ${control.claudePid} started session ${report.sessionId} just now`,
      );
    const queueSinceMs = report.atMs - SESSION_START_LEEWAY_MS;
    const t = this.transcripts.read(report.transcriptPath, queueSinceMs);
    const status = liveStatus(await pane, control, report.sessionId, t);
    this.views.set(seat.name, {
      status,
      transcriptPath: report.transcriptPath,
      sessionId: report.sessionId,
      hasChannelEvent: t.ok && t.hasChannelEvent,
      queueSinceMs,
      promptAtMs: t.lastPromptAtMs,
      ...(control.route === "inbox" && report.inbox ? { inbox: report.inbox } : {}),
    });
    const cannotWork = claudeCannotWork(t);
    return {
      snapshot: {
        status,
        occupantId: seat.occupantId,
        inputCapabilities: {
          deliveryModes: cannotWork ? [] : ["queue"],
          interrupt: this.options.stopper !== undefined,
          nextTurnOnly: true,
        },
        ...(cannotWork ? { cannotWork } : {}),
      },
      proofs: [
        {
          kind: "claude_channel",
          outcome: "proven",
          detail: `${control.route === "inbox" ? "inbox socket" : "channel"} live for Claude ${control.claudePid}, session ${report.sessionId}`,
          completedAtMs: this.options.clock.nowMs(),
        },
      ],
    };
  }

  async write(seat: SeatRecord, message: NativeWrite): Promise<NativeWriteResult> {
    if (message.mode === "steer")
      return {
        result: AgentResult.Rejected,
        reason: "delivery_mode_unsupported",
        detail: "a Claude channel or inbox message cannot steer a running turn; nothing was sent",
      };
    const view = this.views.get(seat.name);
    if (!view)
      return {
        result: AgentResult.NotSent,
        reason: "not_inspected",
        detail: "the seat was not proven just before the write; nothing was sent",
      };
    const control = claudeControl(seat);
    // Rule 39: the turn this write waits behind, kept before it leaves.
    const running = view.status === SeatStatus.Working || view.status === SeatStatus.Blocked;
    this.writeTurns.record(message.deliveryId, view.sessionId, view.promptAtMs, running);
    const meta: Record<string, string> = { conversation: message.conversationId };
    if (message.inReplyTo) meta.in_reply_to = message.inReplyTo;
    if (control.route === "inbox") return this.writeToInbox(view, message, meta);
    const pushed = await pushChannelEvent(
      channelAddress(control),
      this.timeoutMs,
      message.deliveryId,
      message.text,
      meta,
    );
    if (pushed.kind === "not_sent")
      return {
        result: AgentResult.NotSent,
        reason: "channel_unreachable",
        detail: `${pushed.detail}; nothing was sent`,
      };
    if (pushed.kind === "lost")
      return {
        result: AgentResult.Unconfirmed,
        reason: "ack_lost",
        detail: `the event was written to the channel but ${pushed.detail}; not resent`,
      };
    const busy = view.status === SeatStatus.Working || view.status === SeatStatus.Blocked;
    const proven = view.hasChannelEvent || this.provenReceivers.has(view.sessionId);
    if (busy && proven) {
      return {
        result: AgentResult.Queued,
        nativeReceiptId: `channel:${message.deliveryId}`,
        detail:
          "queued_until_turn_end: the channel acknowledged our event id exactly; this session already takes channel events and is mid-turn",
      };
    }
    // Idle, or a receiver never seen taking a channel event: only the exact transcript entry
    // proves it, as a prompt (delivered) or held in Claude's input queue (queued until the turn ends).
    return this.awaitTranscript(
      view,
      message.deliveryId,
      `channel:${message.deliveryId}`,
      // The exact acknowledgment is kept with the receipt (rule 21): a lead's not_delivered settle records it delivered.
      (waited) => ({
        reason: "transcript_entry_missing",
        detail: `the channel acknowledged our event id (transport only) but the transcript did not show it within ${waited}; not resent`,
      }),
    );
  }

  /**
   * The inbox socket answers nothing, so a written line is only "left us": the verdict is the
   * transcript's, queued once Claude enqueued our exact id, delivered once the peer line Claude
   * verified came from this process carries it, otherwise uncertain. A held message (Claude
   * holds peer messages it will not take unasked; #85679: they may expire silently) stays uncertain.
   */
  private async writeToInbox(
    view: View,
    message: NativeWrite,
    meta: Record<string, string>,
  ): Promise<NativeWriteResult> {
    if (!view.inbox)
      return { result: AgentResult.NotSent, reason: "not_inspected", detail: "no inbox was proven; nothing was sent" };
    const pushed = await pushInbox(
      view.inbox.socketPath,
      view.inbox.token,
      inboxContent(message.deliveryId, message.text, meta),
      this.timeoutMs,
    );
    if (pushed.kind === "not_sent")
      return { result: AgentResult.NotSent, reason: "inbox_unreachable", detail: `${pushed.detail}; nothing was sent` };
    if (pushed.kind === "lost")
      return {
        result: AgentResult.Unconfirmed,
        reason: "inbox_write_lost",
        detail: `the message may have reached the inbox socket but ${pushed.detail}; not resent`,
      };
    return this.awaitTranscript(view, message.deliveryId, undefined, (waited) => ({
      reason: "transcript_entry_missing",
      detail: `written to the session's inbox socket, which acknowledges nothing, and the transcript did not show it within ${waited} (held or dropped by Claude?); not resent`,
    }));
  }

  /** Polls the session's transcript for our exact id: delivered on the prompt line, queued on its enqueue, else unconfirmed. */
  private async awaitTranscript(
    view: View,
    deliveryId: string,
    ack: string | undefined,
    missing: (waited: string) => { reason: string; detail: string },
  ): Promise<NativeWriteResult> {
    let gaps = 0;
    let queuedSinceMs: number | undefined;
    const receipt = ack ? { nativeReceiptId: ack } : {};
    const queued = (): NativeWriteResult => ({
      result: AgentResult.Queued,
      ...receipt,
      detail:
        "queued_until_turn_end: the session's transcript shows our message (exact id) in Claude's input queue; it runs when the current turn ends",
    });
    const deadline = Date.now() + this.waitMs;
    do {
      const t = this.transcripts.read(view.transcriptPath, view.queueSinceMs);
      if (!t.ok) gaps++;
      const hit = t.entries.find((e) => e.deliveryId === deliveryId);
      if (hit) {
        if (ack) this.provenReceivers.add(view.sessionId);
        return {
          result: AgentResult.Delivered,
          nativeReceiptId: hit.nativeReceiptId,
          detail: `the session's transcript shows our ${ack ? "channel event" : "inbox message"} (exact id)`,
        };
      }
      if (t.queuedIds.has(deliveryId)) {
        queuedSinceMs ??= Date.now();
        if (Date.now() - queuedSinceMs >= QUEUED_GRACE_MS) return queued();
      }
      await sleep(this.pollMs);
    } while (Date.now() < deadline);
    if (queuedSinceMs !== undefined) return queued();
    const m = missing(`${this.waitMs} ms${gaps ? ` (${gaps} unreadable poll(s))` : ""}`);
    return { result: AgentResult.Unconfirmed, ...receipt, reason: m.reason, detail: m.detail };
  }

  async readSession(seat: SeatRecord, sinceMs: number, deliveryId?: string): Promise<SessionRead> {
    const control = claudeControl(seat);
    // The session read is the live occupant's: a changed occupant is reported as such (rule 46).
    const occupantId = claudeOccupantId(
      await observeClaudeOccupant(control.claudePid, control.reportDir, this.options.proofs),
    );
    const report = readSessionReport(control.reportDir, control.claudePid);
    if (!report) return { occupantId, status: SeatStatus.Unknown, entries: [], complete: false };
    const t = this.transcripts.read(report.transcriptPath, report.atMs - SESSION_START_LEEWAY_MS);
    // The same status inspect reports (pane host, then turn hooks, then the transcript): the
    // unattended release needs "idle" to mean idle, and a held turn's transcript alone can look idle.
    const pane = await this.options.paneStatus?.(seat);
    return {
      occupantId,
      status: liveStatus(pane, control, report.sessionId, t, SeatStatus.Unknown),
      entries: t.entries.filter((e) => e.atMs >= sinceMs),
      complete: t.ok && t.complete,
      ...(deliveryId ? { writeTurn: this.writeTurns.observe(deliveryId, report.sessionId, t) } : {}),
    };
  }

  async stop(seat: SeatRecord): Promise<StopResult> {
    if (!this.options.stopper) return { result: "unsupported", detail: "no guarded key input for this seat's pane" };
    return this.options.stopper(seat);
  }
}
