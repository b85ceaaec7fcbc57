/**
 * The worker-side MCP server a hired Codex, Claude, OpenCode or Pi loads (`clankie worker mcp`),
 * with message_clankie{text} and message_clankie_status (rule 48, scenario 22). It writes
 * nothing before the controller returned the seat's binding; it holds one exclusive claim per
 * pane; "stored" means retained for the lead, not read. After an uncertain send it only
 * reconciles (never resends); an exact not_sent releases the claim; a refused connection is
 * not sent; a different text waits while the original is unresolved. The peer tools are in
 * peer-tools.ts.
 */
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { contentFingerprint } from "../shared/fingerprint.js";
import { INVALID_TEXT, journalTextProblem } from "../shared/well-formed-text.js";
import { WORKER_SOCKET } from "../node-agent/worker-link/worker-endpoint.js";
import { askAgent, type AgentAnswer } from "./agent-socket-client.js";
import { scopeCallThreads, withCallThread } from "./codex-call-thread.js";
import { PaneClaims, type Claim } from "./claims.js";
import { workerMessageResult } from "./output-schemas.js";
import { registerPeerTools } from "./peer-tools.js";

export const MAX_WORKER_TEXT_CHARS = 32_768;
/** The worker side's budget for one peer send (rule 27: Codex's MCP tool limit is 60 s). */
export const PEER_SEND_BUDGET_MS = 50_000;

/** The inbound receipt, in the wire's words: `{received, deliveryStage, deliveryId, binding, fingerprint, detail, definitive?}`. */
type Receipt = Record<string, unknown> & { deliveryStage: "stored" | "uncertain" | "rejected" | "unavailable" };

function toResult(r: Receipt): CallToolResult {
  return {
    content: [{ type: "text", text: JSON.stringify(r) }],
    structuredContent: r,
    isError: r.deliveryStage !== "stored",
  };
}

export interface WorkerMcpOptions {
  agentStateDir: string;
}

export function createWorkerMcpServer(o: WorkerMcpOptions): McpServer {
  const socketPath = join(o.agentStateDir, "worker", WORKER_SOCKET);
  const claims = new PaneClaims(join(o.agentStateDir, "worker", "claims"));
  const ask = (req: Record<string, unknown>) => askAgent(socketPath, withCallThread(req));
  const notSent = (
    stage: "rejected" | "unavailable",
    reason: string,
    detail: string,
    extra: Record<string, unknown> = {},
  ): Receipt => ({
    schemaVersion: 1,
    received: false,
    deliveryStage: stage,
    definitive: "not_sent",
    reason,
    detail: `${detail}; nothing was sent`,
    ...extra,
  });
  const unresolved = (c: Claim, detail: string): Receipt => ({
    schemaVersion: 1,
    received: false,
    deliveryStage: "uncertain",
    deliveryId: c.deliveryId,
    binding: c.binding,
    fingerprint: c.fingerprint,
    detail: `${detail}. It is never resent: call message_clankie_status (or message_clankie again) to reconcile it.`,
  });

  /** Settles this pane's claim from the controller's record: stored, or a definite not_sent (tombstoned). */
  const reconcile = async (
    seatName: string,
    c: Claim,
  ): Promise<{ settled: true; stage: string } | { settled: false; detail: string }> => {
    const a = await ask({ op: "status", id: c.deliveryId, settleUnknown: true });
    if (a.kind !== "answer" || a.body.ok !== true)
      return { settled: false, detail: a.kind === "answer" ? String(a.body.detail ?? a.body.reason) : a.detail };
    const stage = String(a.body.deliveryStage);
    if (stage === "unknown") return { settled: false, detail: String(a.body.detail) };
    claims.release(seatName, c.deliveryId);
    return { settled: true, stage };
  };

  const bind = async (): Promise<
    { ok: true; seatName: string; seatId: string; binding: string } | { ok: false; receipt: Receipt }
  > => {
    const a = await ask({ op: "bind" });
    if (a.kind === "refused")
      return {
        ok: false,
        receipt: notSent("unavailable", "agent_unreachable", `the node agent refused the connection (${a.detail})`),
      };
    if (a.kind === "lost")
      return { ok: false, receipt: notSent("unavailable", "agent_unreachable", `no binding came back (${a.detail})`) };
    if (a.body.ok !== true)
      return {
        ok: false,
        receipt: notSent(
          "unavailable",
          String(a.body.reason ?? "unbound"),
          String(a.body.detail ?? "the controller returned no binding"),
        ),
      };
    return {
      ok: true,
      seatName: String(a.body.seatName),
      seatId: String(a.body.seatId),
      binding: String(a.body.binding),
    };
  };

  const send = async (seatName: string, claim: Claim): Promise<Receipt> => {
    const a: AgentAnswer = await ask({ op: "send", id: claim.deliveryId, text: claim.text, binding: claim.binding });
    const ids = { deliveryId: claim.deliveryId, binding: claim.binding, fingerprint: claim.fingerprint };
    if (a.kind === "refused") {
      claims.release(seatName, claim.deliveryId);
      return notSent("unavailable", "agent_unreachable", `the node agent refused the connection (${a.detail})`, ids);
    }
    if (a.kind === "lost")
      return unresolved(claim, `the answer was lost (${a.detail}); the message may have been stored`);
    if (a.body.ok === true && a.body.deliveryStage === "stored") {
      claims.release(seatName, claim.deliveryId);
      return {
        schemaVersion: 1,
        received: true,
        deliveryStage: "stored",
        ...ids,
        detail: "retained for your lead; stored means kept, not yet read",
      };
    }
    if (a.body.definitiveNotSent === true) {
      claims.release(seatName, claim.deliveryId);
      return notSent("rejected", String(a.body.reason), String(a.body.detail), ids);
    }
    return unresolved(claim, `the controller's answer is unknown (${String(a.body.detail ?? a.body.reason)})`);
  };

  const server = new McpServer({ name: "clankie-worker", version: "0.1.0" }, { capabilities: { tools: {} } });
  scopeCallThreads(server);
  server.registerTool(
    "message_clankie",
    {
      title: "Report to your lead",
      description:
        "Send a message to the lead conversation that hired you (or last messaged your seat). 'stored' means the controller retains it for the lead; it is not yet read. An uncertain send is never resent: call again (same or new text) and it is reconciled first.",
      inputSchema: z.object({ text: z.string().min(1).max(MAX_WORKER_TEXT_CHARS) }).strict(),
      outputSchema: workerMessageResult,
      annotations: {
        title: "Report to your lead",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
    async ({ text }) => {
      // Refused before any claim or send: the wire's UTF-8 would change it (issue 32 item 7).
      const problem = journalTextProblem(text);
      if (problem) return toResult(notSent("rejected", INVALID_TEXT, problem));
      const b = await bind();
      if (!b.ok) return toResult(b.receipt);
      const held = claims.read(b.seatName);
      if (held.kind === "unreadable")
        return toResult(
          notSent(
            "rejected",
            "unreadable_claim",
            `this pane's claim file cannot be read (${held.detail}), so an original cannot be told from a new message`,
          ),
        );
      let previous: { deliveryId: string; deliveryStage: string } | undefined;
      if (held.kind === "held") {
        const r = await reconcile(b.seatName, held.claim);
        if (!r.settled)
          return toResult(
            unresolved(
              held.claim,
              `an earlier message from this pane is unresolved (${r.detail}); ${contentFingerprint(text) === held.claim.fingerprint ? "it is this same text" : "this different text waits until it is resolved"}`,
            ),
          );
        if (contentFingerprint(text) === held.claim.fingerprint && r.stage !== "not_sent") {
          // The same text was already stored: report the original, never a second copy.
          return toResult({
            schemaVersion: 1,
            received: true,
            deliveryStage: "stored",
            deliveryId: held.claim.deliveryId,
            binding: held.claim.binding,
            fingerprint: held.claim.fingerprint,
            detail: `already ${r.stage}: the original was reconciled, not resent`,
          });
        }
        previous = { deliveryId: held.claim.deliveryId, deliveryStage: r.stage };
      }
      const claim = claims.take(b.seatName, { deliveryId: randomUUID(), seatId: b.seatId, binding: b.binding, text });
      if (!claim)
        return toResult(notSent("rejected", "claim_held", "another message from this pane is being sent right now"));
      const receipt = await send(b.seatName, claim);
      return toResult(previous ? { ...receipt, previous } : receipt);
    },
  );
  server.registerTool(
    "message_clankie_status",
    {
      title: "Status of your message to the lead",
      description:
        "Reconciles this pane's unresolved message (or reads the one you name): stored (retained, not read), delivered (offered to the lead), read, or not_sent.",
      inputSchema: z.object({ deliveryId: z.string().uuid().optional() }).strict(),
      outputSchema: workerMessageResult,
      // Reconciling settles this pane's own claim from the controller's record; it sends nothing.
      annotations: {
        title: "Status of your message to the lead",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    async ({ deliveryId: given }) => {
      // Ids are compared in their canonical case (issue 32 item 4).
      const deliveryId = given?.toLowerCase();
      const b = await bind();
      if (!b.ok) return toResult(b.receipt);
      const held = claims.read(b.seatName);
      if (held.kind === "held" && (!deliveryId || deliveryId === held.claim.deliveryId)) {
        const r = await reconcile(b.seatName, held.claim);
        const body = r.settled
          ? { schemaVersion: 1, deliveryId: held.claim.deliveryId, deliveryStage: r.stage, claimReleased: true }
          : { schemaVersion: 1, deliveryId: held.claim.deliveryId, deliveryStage: "uncertain", detail: r.detail };
        return {
          content: [{ type: "text", text: JSON.stringify(body) }],
          structuredContent: body,
          isError: !r.settled,
        };
      }
      if (!deliveryId) {
        const body = { schemaVersion: 1, deliveryStage: "none", detail: "this pane has no unresolved message" };
        return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
      }
      const a = await ask({ op: "status", id: deliveryId, settleUnknown: false });
      const body =
        a.kind === "answer"
          ? {
              schemaVersion: 1,
              deliveryId,
              deliveryStage: String(a.body.deliveryStage ?? "unknown"),
              detail: a.body.detail,
            }
          : { schemaVersion: 1, deliveryId, deliveryStage: "uncertain", detail: a.detail };
      return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
    },
  );
  registerPeerTools(server, {
    ask,
    bind,
    peerClaims: new PaneClaims(join(o.agentStateDir, "worker", "peer-claims")),
    askLong: (req) => askAgent(socketPath, withCallThread(req), PEER_SEND_BUDGET_MS),
    maxTextChars: MAX_WORKER_TEXT_CHARS,
  });
  return server;
}

export async function serveWorkerMcp(o: WorkerMcpOptions): Promise<void> {
  await createWorkerMcpServer(o).connect(new StdioServerTransport());
}
