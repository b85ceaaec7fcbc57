/**
 * OpenCode seats, through the server's own HTTP API (never the /tui/* prompt-box endpoints,
 * which are typing). v2: POST /api/session/{id}/prompt with delivery steer|queue and our id;
 * the durable admittedSeq is the receipt, the session.next.prompted event the delivery.
 * v1 (servers without /api) is the fallback: prompt_async with our messageID, queue only.
 */
import { AgentResult, SeatKind, SeatStatus } from "../../shared/verdicts.js";
import type { MonotonicClock, ProofFact } from "../proofs/proof.js";
import type { HarnessAdapter, InputCapabilities, NativeWrite, NativeWriteResult, SeatRecord, SeatSnapshot, SessionRead, StopResult } from "./adapter.js";
import { callOpenCode, jsonBody, type HttpOutcome } from "./opencode-http.js";
import { v1MessageId, v2MessageId } from "./opencode-ids.js";
import { openCodeControl, openCodeEndpoint, type OpenCodeControl } from "./opencode-control.js";
import { readOpenCodeSession, findPrompted } from "./opencode-session.js";
import { discoverOpenCode } from "./opencode-discover.js";

export interface OpenCodeAdapterOptions {
  clock: MonotonicClock;
  requestTimeoutMs?: number;
  /** How long an idle seat's write waits for the prompted event before reporting the admission alone. */
  promptedWaitMs?: number;
  pollMs?: number;
}

type Probe =
  | { ok: true; api: "v2" | "v1"; running: boolean }
  | { ok: false; outcome: "refuted" | "unknown"; status: SeatStatus; detail: string };

function capabilities(api: "v2" | "v1", running: boolean): InputCapabilities {
  // v2 steers a running turn; with no turn running there is nothing to steer, so only queue.
  return { deliveryModes: api === "v2" && running ? ["steer", "queue"] : ["queue"], interrupt: true, nextTurnOnly: false };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class OpenCodeAdapter implements HarnessAdapter {
  readonly kind = SeatKind.OpenCode;
  private readonly timeoutMs: number;
  private readonly promptedWaitMs: number;
  private readonly pollMs: number;
  /** The last inspect's view per seat: write runs right after it (the freshness gate bounds the gap). */
  private readonly lastProbe = new Map<string, Probe>();

  constructor(private readonly options: OpenCodeAdapterOptions) {
    this.timeoutMs = options.requestTimeoutMs ?? 5000;
    this.promptedWaitMs = options.promptedWaitMs ?? 5000;
    this.pollMs = options.pollMs ?? 100;
  }

  private call(control: OpenCodeControl, method: "GET" | "POST", path: string, body?: unknown): Promise<HttpOutcome> {
    return callOpenCode(openCodeEndpoint(control), { method, path, body, timeoutMs: this.timeoutMs });
  }

  private async probe(control: OpenCodeControl): Promise<Probe> {
    const sid = encodeURIComponent(control.sessionId);
    const failed = (o: HttpOutcome, what: string): Probe => {
      if (o.kind === "not_connected") return { ok: false, outcome: "refuted", status: SeatStatus.Offline, detail: o.detail };
      if (o.kind === "lost") return { ok: false, outcome: "unknown", status: SeatStatus.Unknown, detail: `${what}: ${o.detail}` };
      if (o.status === 401) return { ok: false, outcome: "refuted", status: SeatStatus.Unknown, detail: `${what}: the server refused our credentials (401)` };
      if (o.status === 404) return { ok: false, outcome: "refuted", status: SeatStatus.Offline, detail: `${what}: session ${control.sessionId} is not on this server` };
      return { ok: false, outcome: "unknown", status: SeatStatus.Unknown, detail: `${what}: HTTP ${o.status}` };
    };
    // The two reads run together: the proof is stamped when both are in, and the freshness gate counts from there.
    const [active, info] = await Promise.all([this.call(control, "GET", "/api/session/active"), this.call(control, "GET", `/api/session/${sid}`)]);
    if (active.kind === "answered" && active.status === 200) {
      const body = jsonBody<{ data?: Record<string, { type?: string }> }>(active);
      if (!body?.data) return { ok: false, outcome: "unknown", status: SeatStatus.Unknown, detail: "GET /api/session/active: not the expected JSON" };
      if (info.kind !== "answered" || info.status !== 200) return failed(info, "GET /api/session/{id}");
      return { ok: true, api: "v2", running: body.data[control.sessionId]?.type === "running" };
    }
    if (active.kind !== "answered" || active.status !== 404) return failed(active, "GET /api/session/active");
    // No v2 routes: a v1-only server.
    const [status, v1info] = await Promise.all([this.call(control, "GET", "/session/status"), this.call(control, "GET", `/session/${sid}`)]);
    if (status.kind !== "answered" || status.status !== 200) return failed(status, "GET /session/status");
    if (v1info.kind !== "answered" || v1info.status !== 200) return failed(v1info, "GET /session/{id}");
    const type = jsonBody<Record<string, { type?: string }>>(status)?.[control.sessionId]?.type;
    return { ok: true, api: "v1", running: type === "busy" || type === "retry" };
  }

  async inspect(seat: SeatRecord): Promise<{ snapshot: SeatSnapshot; proofs: ProofFact[] }> {
    let control: OpenCodeControl;
    try {
      control = openCodeControl(seat);
    } catch (e) {
      const proofs: ProofFact[] = [{ kind: "opencode_session", outcome: "refuted", detail: (e as Error).message, completedAtMs: this.options.clock.nowMs() }];
      return { snapshot: { status: SeatStatus.Unknown, occupantId: seat.occupantId, inputCapabilities: { deliveryModes: [], interrupt: false, nextTurnOnly: false } }, proofs };
    }
    const p = await this.probe(control);
    this.lastProbe.set(seat.name, p);
    const completedAtMs = this.options.clock.nowMs();
    if (!p.ok) {
      return {
        snapshot: { status: p.status, occupantId: seat.occupantId, inputCapabilities: { deliveryModes: [], interrupt: false, nextTurnOnly: false } },
        proofs: [{ kind: "opencode_session", outcome: p.outcome, detail: p.detail, completedAtMs }],
      };
    }
    return {
      snapshot: { status: p.running ? SeatStatus.Working : SeatStatus.Idle, occupantId: seat.occupantId, inputCapabilities: capabilities(p.api, p.running) },
      proofs: [{ kind: "opencode_session", outcome: "proven", detail: `${p.api} session ${control.sessionId} at ${control.baseUrl} is ${p.running ? "running" : "idle"}`, completedAtMs }],
    };
  }

  async write(seat: SeatRecord, message: NativeWrite): Promise<NativeWriteResult> {
    const control = openCodeControl(seat);
    const probe = this.lastProbe.get(seat.name);
    if (!probe?.ok) return { result: AgentResult.NotSent, reason: "not_inspected", detail: "the seat was not proven live just before the write; nothing was sent" };
    return probe.api === "v2" ? this.writeV2(control, message, probe.running) : this.writeV1(control, message, probe.running);
  }

  private unsent(o: HttpOutcome): NativeWriteResult | undefined {
    if (o.kind === "not_connected") return { result: AgentResult.NotSent, reason: "opencode_unreachable", detail: `${o.detail}; nothing was sent` };
    if (o.kind === "lost") return { result: AgentResult.Unconfirmed, reason: "response_lost", detail: `the prompt was sent but its answer was lost (${o.detail}); not resent` };
    if (o.status >= 500) return { result: AgentResult.Unconfirmed, reason: "opencode_error", detail: `OpenCode answered HTTP ${o.status} after receiving the prompt; it may have been admitted; not resent` };
    if (o.status >= 400) return { result: AgentResult.NotSent, reason: "refused_by_opencode", detail: `OpenCode refused the prompt (HTTP ${o.status}): ${o.body.slice(0, 200)}` };
    return undefined;
  }

  private async writeV2(control: OpenCodeControl, message: NativeWrite, running: boolean): Promise<NativeWriteResult> {
    const id = v2MessageId(message.deliveryId);
    // Auto means the least disruptive route: wait for the turn to end (queue).
    const delivery = message.mode === "steer" ? "steer" : "queue";
    const sid = encodeURIComponent(control.sessionId);
    const o = await this.call(control, "POST", `/api/session/${sid}/prompt`, { prompt: { text: message.text }, id, delivery });
    const bad = this.unsent(o);
    if (bad) return bad;
    const admitted = jsonBody<{ data?: { admittedSeq?: number; id?: string } }>(o)?.data;
    if (admitted?.id !== id || typeof admitted.admittedSeq !== "number") {
      return { result: AgentResult.Unconfirmed, reason: "receipt_mismatch", detail: `OpenCode answered without an admission of ${id}; not resent` };
    }
    const receipt = `${control.sessionId}#${admitted.admittedSeq}`;
    if (running && delivery === "steer") {
      return { result: AgentResult.Steered, nativeReceiptId: receipt, detail: `admitted at seq ${admitted.admittedSeq} as steer; joins the running turn at its next step boundary` };
    }
    if (running) {
      return { result: AgentResult.Queued, nativeReceiptId: receipt, detail: `queued_until_turn_end: admitted at seq ${admitted.admittedSeq}` };
    }
    const prompted = await this.waitForPrompted(control, id, admitted.admittedSeq);
    if (prompted !== undefined) return { result: AgentResult.Delivered, nativeReceiptId: receipt, detail: `prompted at seq ${prompted}: a turn began with it` };
    return { result: AgentResult.Queued, nativeReceiptId: receipt, detail: `admitted at seq ${admitted.admittedSeq}; not yet prompted` };
  }

  private async waitForPrompted(control: OpenCodeControl, id: string, admittedSeq: number): Promise<number | undefined> {
    const deadline = Date.now() + this.promptedWaitMs;
    do {
      // A failed history read is a poll gap, not a verdict: the admission already stands.
      const seq = await findPrompted(control, this.timeoutMs, id, admittedSeq - 1);
      if (seq !== undefined) return seq;
      await sleep(this.pollMs);
    } while (Date.now() < deadline);
    return undefined;
  }

  private async writeV1(control: OpenCodeControl, message: NativeWrite, running: boolean): Promise<NativeWriteResult> {
    const id = v1MessageId(message.deliveryId, Date.now());
    const sid = encodeURIComponent(control.sessionId);
    const o = await this.call(control, "POST", `/session/${sid}/prompt_async`, { parts: [{ type: "text", text: message.text }], messageID: id });
    const bad = this.unsent(o);
    if (bad) return bad;
    const receipt = `${control.sessionId}#${id}`;
    const deadline = Date.now() + this.promptedWaitMs;
    do {
      const stored = await this.call(control, "GET", `/session/${sid}/message/${encodeURIComponent(id)}`);
      if (stored.kind === "answered" && stored.status === 200) {
        return running
          ? { result: AgentResult.Queued, nativeReceiptId: receipt, detail: "queued_until_turn_end: stored with our message id (v1)" }
          : { result: AgentResult.Delivered, nativeReceiptId: receipt, detail: "stored with our message id; a turn began (v1)" };
      }
      await sleep(this.pollMs);
    } while (Date.now() < deadline);
    return { result: AgentResult.Queued, nativeReceiptId: receipt, detail: "accepted by prompt_async (v1); our message id not yet visible" };
  }

  async readSession(seat: SeatRecord, sinceMs: number): Promise<SessionRead> {
    const control = openCodeControl(seat);
    const p = await this.probe(control);
    const api = p.ok ? p.api : "v2";
    const { entries, complete } = await readOpenCodeSession(control, this.timeoutMs, api, sinceMs);
    return { occupantId: seat.occupantId, status: p.ok ? (p.running ? SeatStatus.Working : SeatStatus.Idle) : p.status, entries, complete: complete && p.ok };
  }

  async stop(seat: SeatRecord): Promise<StopResult> {
    const control = openCodeControl(seat);
    const before = await this.probe(control);
    if (!before.ok) return { result: before.outcome === "refuted" ? "unavailable" : "uncertain", detail: before.detail };
    if (!before.running) return { result: "already_finished", detail: "no turn was running" };
    const sid = encodeURIComponent(control.sessionId);
    const o = await this.call(control, "POST", before.api === "v2" ? `/api/session/${sid}/interrupt` : `/session/${sid}/abort`);
    if (o.kind === "not_connected") return { result: "unavailable", detail: o.detail };
    if (o.kind === "lost" || o.status >= 300) return { result: "uncertain", detail: o.kind === "lost" ? o.detail : `HTTP ${o.status}` };
    const deadline = Date.now() + this.promptedWaitMs;
    do {
      const after = await this.probe(control);
      if (after.ok && !after.running) return { result: "stopped", detail: "interrupted; the session is idle" };
      await sleep(this.pollMs);
    } while (Date.now() < deadline);
    return { result: "uncertain", detail: "interrupt accepted but the session was not seen idle" };
  }

  discover = discoverOpenCode;
}
