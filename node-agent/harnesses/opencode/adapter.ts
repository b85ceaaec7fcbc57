/**
 * OpenCode seats, through the server's own HTTP API (never the /tui/* prompt-box endpoints,
 * which are typing). Every delivery that starts or waits for a turn goes through v1
 * prompt_async with our message id (opencode-write.ts): only such a turn is offered the
 * session's MCP tools, the worker server's message_clankie among them. v2 is used only to join
 * a run another client started through v2 (steer, or queue behind it).
 * Each write's stage comes from the status table in opencode-stages.ts (rule 41), and a
 * delivery id whose write was uncertain is never written again, whatever mode a retry asks.
 */
import { AgentResult, SeatKind, SeatStatus } from "../../../shared/verdicts.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import type {
  HarnessAdapter,
  InputCapabilities,
  NativeWrite,
  NativeWriteResult,
  SeatRecord,
  SeatSnapshot,
  SessionRead,
  StopResult,
} from "../adapter.js";
import { callOpenCode, type HttpOutcome } from "./http.js";
import { openCodeControl, openCodeEndpoint, type OpenCodeControl } from "./control.js";
import { directoryQuery, isRunning, probeOpenCode, type OpenCodeCall, type OpenCodeProbe } from "./probe.js";
import { readOpenCodeSession } from "./session.js";
import { discoverOpenCode } from "./discover.js";
import { OPENCODE_STAGE, openCodeStatus } from "./stages.js";
import { writeV1, writeV2, type WriteTiming } from "./write.js";
import { OpenCodeReadiness, openCodeRetryCannotWork } from "./readiness.js";
import { OpenCodeWriteTurns } from "./write-turns.js";

export interface OpenCodeAdapterOptions {
  clock: MonotonicClock;
  requestTimeoutMs?: number;
  /** How long a write waits for its receipt (our message id stored), and an idle seat's for the turn that answers it. */
  promptedWaitMs?: number;
  pollMs?: number;
}

/** Steer exists only inside a v2 run; a v1 turn (ours, the TUI's) takes further messages queued behind it. */
function capabilities(p: OpenCodeProbe & { ok: true }): InputCapabilities {
  return {
    deliveryModes: p.api === "v2" && p.v2Running && !p.v1Busy ? ["steer", "queue"] : ["queue"],
    interrupt: true,
    nextTurnOnly: false,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How many uncertain delivery ids one adapter remembers. */
const MAX_UNCERTAIN_IDS = 1000;

export class OpenCodeAdapter implements HarnessAdapter {
  readonly kind = SeatKind.OpenCode;
  private readonly timeoutMs: number;
  private readonly promptedWaitMs: number;
  private readonly pollMs: number;
  /** The last inspect's view per seat: write runs right after it (the freshness gate bounds the gap). */
  private readonly lastProbe = new Map<string, OpenCodeProbe>();
  /** Delivery ids whose write is uncertain, per session (rule 41): never written again. */
  private readonly uncertainIds = new Map<string, string>();
  /** Whether each occupant's configured model can run (issue 35): OpenCode's own config answer. */
  private readonly readiness = new OpenCodeReadiness();
  /** Rule 39: the turn each write waited behind. */
  private readonly writeTurns = new OpenCodeWriteTurns();

  constructor(private readonly options: OpenCodeAdapterOptions) {
    this.timeoutMs = options.requestTimeoutMs ?? 5000;
    this.promptedWaitMs = options.promptedWaitMs ?? 5000;
    this.pollMs = options.pollMs ?? 100;
  }

  private call(control: OpenCodeControl, method: "GET" | "POST", path: string, body?: unknown): Promise<HttpOutcome> {
    return callOpenCode(openCodeEndpoint(control), { method, path, body, timeoutMs: this.timeoutMs });
  }

  private caller(control: OpenCodeControl): OpenCodeCall {
    return (method, path, body) => this.call(control, method, path, body);
  }

  private probe(control: OpenCodeControl): Promise<OpenCodeProbe> {
    return probeOpenCode(this.caller(control), control);
  }

  private get timing(): WriteTiming {
    return { timeoutMs: this.timeoutMs, waitMs: this.promptedWaitMs, pollMs: this.pollMs };
  }

  async inspect(seat: SeatRecord): Promise<{ snapshot: SeatSnapshot; proofs: ProofFact[] }> {
    let control: OpenCodeControl;
    try {
      control = openCodeControl(seat);
    } catch (e) {
      const proofs: ProofFact[] = [
        {
          kind: "opencode_session",
          outcome: "refuted",
          detail: (e as Error).message,
          completedAtMs: this.options.clock.nowMs(),
        },
      ];
      return {
        snapshot: {
          status: SeatStatus.Unknown,
          occupantId: seat.occupantId,
          inputCapabilities: { deliveryModes: [], interrupt: false, nextTurnOnly: false },
        },
        proofs,
      };
    }
    let p = await this.probe(control);
    // The first answer about an occupant's model may take OpenCode seconds (it loads its provider
    // catalog): the probe is then taken again after it, so the proof is as fresh as ever.
    const asked = this.readiness.has(seat.occupantId);
    const cannotWork = p.ok
      ? (openCodeRetryCannotWork(p) ??
        (await this.readiness.check(seat.occupantId, this.caller(control), control, directoryQuery(p))))
      : undefined;
    if (p.ok && !cannotWork && !asked) p = await this.probe(control);
    this.lastProbe.set(seat.name, p);
    const completedAtMs = this.options.clock.nowMs();
    if (!p.ok) {
      return {
        snapshot: {
          status: p.status,
          occupantId: seat.occupantId,
          inputCapabilities: { deliveryModes: [], interrupt: false, nextTurnOnly: false },
        },
        proofs: [{ kind: "opencode_session", outcome: p.outcome, detail: p.detail, completedAtMs }],
      };
    }
    return {
      snapshot: {
        status: isRunning(p) ? SeatStatus.Working : SeatStatus.Idle,
        occupantId: seat.occupantId,
        // A seat that cannot take a turn offers no input (issue 35).
        inputCapabilities: cannotWork ? { deliveryModes: [], interrupt: false, nextTurnOnly: false } : capabilities(p),
        ...(cannotWork ? { cannotWork } : {}),
      },
      proofs: [
        {
          kind: "opencode_session",
          outcome: "proven",
          detail: `${p.api} server: session ${control.sessionId} at ${control.baseUrl} is ${p.v1Busy ? "running a turn" : p.v2Running ? "running a v2 run" : "idle"}`,
          completedAtMs,
        },
      ],
    };
  }

  /** Every write's stage comes from the status table (rule 41); an uncertain id is never written again, whatever its mode. */
  async write(seat: SeatRecord, message: NativeWrite): Promise<NativeWriteResult> {
    const control = openCodeControl(seat);
    const key = `${control.sessionId}\n${message.deliveryId}`;
    const earlier = this.uncertainIds.get(key);
    if (earlier !== undefined) {
      return {
        result: AgentResult.Unconfirmed,
        deliveryStage: OPENCODE_STAGE.uncertain,
        reason: "uncertain_original",
        detail: `this delivery's earlier write is uncertain (${earlier}); it blocks every retry, explicit modes included; nothing was written`,
      };
    }
    const probe = this.lastProbe.get(seat.name);
    // Rule 39: the turn this write waits behind, kept before its request leaves.
    if (probe?.ok)
      await this.writeTurns.record(
        this.caller(control),
        control,
        message.deliveryId,
        isRunning(probe),
        directoryQuery(probe),
      );
    const written: NativeWriteResult = !probe?.ok
      ? {
          result: AgentResult.NotSent,
          reason: "not_inspected",
          detail: "the seat was not proven live just before the write; nothing was sent",
        }
      : probe.api === "v2" && probe.v2Running && !probe.v1Busy
        ? await writeV2(this.caller(control), control, message)
        : await writeV1(this.caller(control), control, message, probe.v1Busy, directoryQuery(probe), this.timing);
    const status = openCodeStatus(written.result, probe !== undefined && isRunning(probe));
    if (status === "uncertain") {
      this.uncertainIds.set(key, written.reason ?? "unconfirmed");
      // Bounded: the oldest entries go first (the controller's fence still refuses their content).
      for (const k of this.uncertainIds.keys()) {
        if (this.uncertainIds.size <= MAX_UNCERTAIN_IDS) break;
        this.uncertainIds.delete(k);
      }
    }
    return status ? { ...written, deliveryStage: OPENCODE_STAGE[status] } : written;
  }

  async readSession(seat: SeatRecord, sinceMs: number, deliveryId?: string): Promise<SessionRead> {
    const control = openCodeControl(seat);
    const p = await this.probe(control);
    const api = p.ok ? p.api : "v2";
    const { entries, complete } = await readOpenCodeSession(control, this.timeoutMs, api, sinceMs);
    const writeTurn = deliveryId
      ? await this.writeTurns.observe(this.caller(control), control, deliveryId, directoryQuery(p))
      : undefined;
    return {
      occupantId: seat.occupantId,
      status: p.ok ? (isRunning(p) ? SeatStatus.Working : SeatStatus.Idle) : p.status,
      entries,
      complete: complete && p.ok,
      ...(writeTurn ? { writeTurn } : {}),
    };
  }

  async stop(seat: SeatRecord): Promise<StopResult> {
    const control = openCodeControl(seat);
    const before = await this.probe(control);
    if (!before.ok)
      return { result: before.outcome === "refuted" ? "unavailable" : "uncertain", detail: before.detail };
    if (!isRunning(before)) return { result: "already_finished", detail: "no turn was running" };
    const sid = encodeURIComponent(control.sessionId);
    // Each API stops its own run: v1 abort for a v1 turn, v2 interrupt for a v2 run.
    const paths = [
      ...(before.v1Busy ? [`/session/${sid}/abort${directoryQuery(before)}`] : []),
      ...(before.v2Running ? [`/api/session/${sid}/interrupt`] : []),
    ];
    for (const path of paths) {
      const o = await this.call(control, "POST", path);
      if (o.kind === "not_connected") return { result: "unavailable", detail: o.detail };
      if (o.kind === "lost" || o.status >= 300)
        return { result: "uncertain", detail: o.kind === "lost" ? o.detail : `HTTP ${o.status}` };
    }
    const deadline = Date.now() + this.promptedWaitMs;
    do {
      const after = await this.probe(control);
      if (after.ok && !isRunning(after)) return { result: "stopped", detail: "interrupted; the session is idle" };
      await sleep(this.pollMs);
    } while (Date.now() < deadline);
    return { result: "uncertain", detail: "interrupt accepted but the session was not seen idle" };
  }

  discover = discoverOpenCode;
}
