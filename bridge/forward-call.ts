/**
 * One lead tool call through the bridge. The seat-call id (deliveryId for message_seat,
 * hireId for hire_agent) is minted here, before dispatch, and kept for the whole call: a
 * retry and every uncertain answer carry the same one. The call is retried exactly once, in
 * a new session, and only when no controller can have admitted it: the controller explicitly
 * refused it as an unknown session before tool admission, or (with several replicas' URLs,
 * ADR 0037) its replica refused the TCP connection, so the request never left this machine; that
 * retry goes to the next replica. A lost answer is typed uncertainty with the original id and is
 * never replayed; a refused connection or an explicit pre-admission refusal is a definite not-sent.
 */
import { randomUUID } from "node:crypto";
import { CallToolResultSchema, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { SEAT_CALL_META_KEY } from "../controller/for-cli.js";
import { canonicalRef } from "../shared/ids.js";
import type { Logger } from "../shared/logger.js";
import { ATTEMPT_META_KEY, type PostFate, type PostWatch } from "./post-watch.js";
import { wireError } from "./wire-error.js";
import { ControllerUnreachableError, LeadTokenRejectedError } from "./generations.js";
import type { Generation, Generations } from "./generations.js";
import { notSentResult, uncertainResult, type SeatCallIds } from "./bodies.js";

/** Tools whose calls carry a bridge-minted id, by the field that names it. */
export const SEAT_CALL_TOOLS: Record<string, SeatCallIds["field"]> = {
  message_seat: "deliveryId",
  hire_agent: "hireId",
};

/** Long enough for a delivery that waits its seat's turn (25 s) and its agent (20 s); past it the answer is lost. */
export const CALL_TIMEOUT_MS = 10 * 60_000;

type Verdict =
  | { kind: "result"; result: CallToolResult }
  | { kind: "mcp_error"; error: McpError }
  | { kind: "unknown_session" }
  | { kind: "not_sent"; reason: string; detail: string }
  | { kind: "uncertain"; reason: string; detail: string };

/** The controller's explicit refusal marker: `error.data.admitted === false` (controller/mcp/server.ts). */
function explicitRefusal(body: string): { reason: string; message: string } | undefined {
  try {
    const msg = JSON.parse(body) as { error?: { message?: unknown; data?: { admitted?: unknown; reason?: unknown } } };
    if (msg.error?.data?.admitted !== false || typeof msg.error.data.reason !== "string") return undefined;
    return { reason: msg.error.data.reason, message: String(msg.error.message ?? "") };
  } catch {
    return undefined;
  }
}

/** Judges one attempt from what the wire showed, never from the SDK's exception text alone. */
function judge(fate: PostFate | undefined, error: unknown): Verdict {
  if (error instanceof McpError && fate?.kind === "answered") return { kind: "mcp_error", error };
  if (!fate)
    return {
      kind: "uncertain",
      reason: "result_lost",
      detail: `no answer came back: ${(error as Error)?.message ?? String(error)}`,
    };
  switch (fate.kind) {
    case "answered":
      return {
        kind: "uncertain",
        reason: "result_lost",
        detail: `the answer could not be read: ${(error as Error)?.message ?? String(error)}`,
      };
    case "refused":
      return {
        kind: "not_sent",
        reason: "controller_unreachable",
        detail: `the controller refused the connection (${fate.detail})`,
      };
    case "lost":
      return { kind: "uncertain", reason: "result_lost", detail: fate.detail };
    case "rejected": {
      const refusal = explicitRefusal(fate.body);
      if (!refusal)
        return {
          kind: "uncertain",
          reason: "result_lost",
          detail: `HTTP ${fate.status} without the controller's not-admitted marker`,
        };
      if (fate.status === 404 && refusal.reason === "unknown_session") return { kind: "unknown_session" };
      return {
        kind: "not_sent",
        reason: refusal.reason,
        detail: `the controller refused the call before admission (HTTP ${fate.status}: ${refusal.message})`,
      };
    }
  }
}

export class CallForwarder {
  constructor(
    private readonly gens: Generations,
    private readonly watch: PostWatch,
    private readonly logger: Logger,
    private readonly timeoutMs = CALL_TIMEOUT_MS,
  ) {}

  async call(
    name: string,
    args: Record<string, unknown> | undefined,
    meta: Record<string, unknown> | undefined,
  ): Promise<CallToolResult> {
    const ids = this.mint(name, meta);
    const seatMeta = ids
      ? { ...(meta?.[SEAT_CALL_META_KEY] as Record<string, unknown> | undefined), [ids.field]: ids.id }
      : undefined;
    for (let attempt = 1; ; attempt++) {
      let gen: Generation;
      try {
        gen = await this.gens.acquire();
      } catch (e) {
        if (e instanceof LeadTokenRejectedError) return notSentResult(name, ids, "unauthenticated", e.message);
        const detail =
          e instanceof ControllerUnreachableError ? e.message : `could not open a session: ${(e as Error).message}`;
        return notSentResult(name, ids, "controller_unreachable", detail);
      }
      let verdict: Verdict;
      try {
        verdict = await this.attempt(gen, name, args, {
          ...meta,
          ...(seatMeta ? { [SEAT_CALL_META_KEY]: seatMeta } : {}),
        });
      } finally {
        this.gens.release(gen);
      }
      switch (verdict.kind) {
        case "result":
          return verdict.result;
        case "mcp_error":
          throw wireError(verdict.error);
        case "unknown_session":
          this.gens.retire(gen, "unknown_session before admission");
          if (attempt === 1) {
            this.logger.info("the controller no longer knows the session; retrying once in a new session", {
              tool: name,
              id: ids?.id,
              generation: gen.n,
            });
            continue;
          }
          return notSentResult(
            name,
            ids,
            "unknown_session",
            "the controller refused the call as an unknown session twice, both before admission",
          );
        case "not_sent":
          if (verdict.reason === "controller_unreachable") {
            this.gens.retire(gen, verdict.detail, true);
            if (attempt === 1 && this.gens.urlCount > 1) {
              this.logger.info(
                "the replica refused the connection (nothing was sent); retrying once at the next replica",
                { tool: name, id: ids?.id, generation: gen.n },
              );
              continue;
            }
          }
          // A token refused mid-session: the next session reads the token file again (a re-issued one works).
          if (verdict.reason === "unauthenticated") {
            this.gens.retire(gen, "the lead token was refused (HTTP 401)");
            return notSentResult(name, ids, verdict.reason, this.gens.tokenRejected(401));
          }
          return notSentResult(name, ids, verdict.reason, verdict.detail);
        case "uncertain":
          // Its replica may be gone: the next call opens its session at the next one (this call is not replayed).
          this.gens.retire(gen, verdict.detail, true);
          this.logger.warn("a call's answer was lost; it is not replayed", {
            tool: name,
            id: ids?.id,
            detail: verdict.detail,
          });
          return uncertainResult(name, ids, verdict.reason, verdict.detail);
      }
    }
  }

  private mint(name: string, meta: Record<string, unknown> | undefined): SeatCallIds | undefined {
    const field = SEAT_CALL_TOOLS[name];
    if (!field) return undefined;
    // A lead that passes its own id (to look up an earlier call by replaying it) keeps it, in its
    // canonical case (issue 32 item 4), so every answer the bridge makes names the journal's id.
    // One that is no UUID goes on as given, for the controller to refuse in its words.
    const given = (meta?.[SEAT_CALL_META_KEY] as Record<string, unknown> | undefined)?.[field];
    return { tool: name, field, id: typeof given === "string" && given ? canonicalRef(given) : randomUUID() };
  }

  private async attempt(
    gen: Generation,
    name: string,
    args: Record<string, unknown> | undefined,
    meta: Record<string, unknown>,
  ): Promise<Verdict> {
    const tag = randomUUID();
    const fate = this.watch.expect(tag);
    let seen: PostFate | undefined;
    void fate.then((f) => (seen = f));
    const sdk = gen.client
      .request(
        {
          method: "tools/call",
          params: { name, ...(args ? { arguments: args } : {}), _meta: { ...meta, [ATTEMPT_META_KEY]: tag } },
        },
        CallToolResultSchema,
        { timeout: this.timeoutMs },
      )
      .then(
        (result) => ({ ok: true as const, result: result as CallToolResult }),
        (error: unknown) => ({ ok: false as const, error }),
      );
    // A stream that ends without the answer leaves the SDK waiting for its timeout: stop on the wire's verdict.
    const lostEarly = fate.then((f) => (f.kind === "lost" ? f : new Promise<never>(() => {})));
    const first = await Promise.race([sdk, lostEarly]);
    this.watch.forget(tag);
    if ("kind" in first) return { kind: "uncertain", reason: "result_lost", detail: first.detail };
    if (first.ok) return { kind: "result", result: first.result };
    // The fate settles before the SDK sees the failure; a request that never reached fetch has none.
    await Promise.race([fate, new Promise((r) => setImmediate(r))]);
    return judge(seen, first.error);
  }
}
