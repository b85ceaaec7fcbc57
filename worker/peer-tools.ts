/**
 * The worker's peer tools, list_fleet_seats and message_peer (rule 49, scenarios 23–24), registered on
 * the worker-side MCP server (fleet-mcp.ts): same fleet only, while the owner has peers on, one
 * unresolved claim per sender pane, an uncertain send reconciled and never resent.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { contentFingerprint } from "../shared/fingerprint.js";
import { INVALID_TEXT, isWellFormedText } from "../shared/well-formed-text.js";
import type { AgentAnswer } from "./agent-socket-client.js";
import type { PaneClaims } from "./claims.js";
import { fleetSeatsResult, peerMessageResult } from "./output-schemas.js";

/** A peer original the controller has no receipt for, older than this, never reached it (the agent gives up at 48 s). */
const PEER_NO_RECEIPT_GRACE_MS = 60_000;
const LONE_SURROGATE = "the text holds a lone UTF-16 surrogate, which cannot be delivered as written";

function json(body: Record<string, unknown>, isError: boolean): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body, isError };
}

/** The pane's binding to its seat, asked of the node agent before any tool writes; a refusal comes as its receipt. */
export type Bind = () => Promise<
  { ok: true; seatName: string; seatId: string; binding: string } | { ok: false; receipt: Record<string, unknown> }
>;

export interface PeerToolDeps {
  ask: (req: Record<string, unknown>) => Promise<AgentAnswer>;
  /** The same, with the peer send's budget (PEER_SEND_BUDGET_MS). */
  askLong: (req: Record<string, unknown>) => Promise<AgentAnswer>;
  bind: Bind;
  peerClaims: PaneClaims;
  /** The longest text a worker tool takes (the same for message_clankie). */
  maxTextChars: number;
}

/**
 * list_fleet_seats and message_peer (rule 49, scenarios 23–24): same fleet only, while the
 * owner has peers on; one unresolved claim per sender pane; after a settled original a
 * different text goes out in the same call carrying the original's outcome as `previous`, and
 * the same text is never resent; a recipient that is gone ends the original as unconfirmed.
 */
export function registerPeerTools(server: McpServer, d: PeerToolDeps): void {
  server.registerTool(
    "list_fleet_seats",
    {
      title: "List the fleet's other seats",
      description:
        "The other worker seats of your fleet you may message with message_peer (only when the owner has turned peer messages on).",
      inputSchema: z.object({}).strict(),
      outputSchema: fleetSeatsResult,
      annotations: {
        title: "List the fleet's other seats",
        readOnlyHint: true,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    async () => {
      const b = await d.bind();
      if (!b.ok) return json(b.receipt, true);
      const a = await d.ask({ op: "peers", binding: b.binding });
      if (a.kind !== "answer") return json({ schemaVersion: 1, outcome: "unavailable", detail: a.detail }, true);
      if (a.body.ok !== true)
        return json({ schemaVersion: 1, outcome: "refused", reason: a.body.reason, detail: a.body.detail }, true);
      return json({ schemaVersion: 1, seats: a.body.seats }, false);
    },
  );
  server.registerTool(
    "message_peer",
    {
      title: "Message another worker seat",
      description:
        "Send a message to another seat of your fleet (list_fleet_seats). It carries no owner authority. An uncertain send is never resent: call again and it is reconciled first.",
      inputSchema: z.object({ seat: z.string().min(1).max(200), text: z.string().min(1).max(d.maxTextChars) }).strict(),
      outputSchema: peerMessageResult,
      annotations: {
        title: "Message another worker seat",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
    },
    async ({ seat, text }) => {
      if (!isWellFormedText(text)) {
        const body = {
          schemaVersion: 1,
          outcome: "undelivered",
          reason: INVALID_TEXT,
          detail: `${LONE_SURROGATE}; nothing was sent`,
        };
        return json(body, true);
      }
      const b = await d.bind();
      if (!b.ok) return json(b.receipt, true);
      const held = d.peerClaims.read(b.seatName);
      if (held.kind === "unreadable")
        return json(
          {
            schemaVersion: 1,
            outcome: "undelivered",
            reason: "unreadable_claim",
            detail: `${held.detail}; nothing was sent`,
          },
          true,
        );
      let previous: { deliveryId: string; state: string; reason?: string } | undefined;
      if (held.kind === "held") {
        const c = held.claim;
        const a = await d.ask({ op: "peer_status", binding: b.binding, id: c.deliveryId });
        const state = a.kind === "answer" && a.body.ok === true ? String(a.body.state) : "unreachable";
        const body = a.kind === "answer" ? (a.body.body as Record<string, unknown> | undefined) : undefined;
        const settled =
          state === "settled" || (state === "unknown" && Date.now() - c.claimedAtMs > PEER_NO_RECEIPT_GRACE_MS);
        if (!settled) {
          return json(
            {
              schemaVersion: 1,
              outcome: "uncertain",
              deliveryStage: "uncertain",
              deliveryId: c.deliveryId,
              detail: `your earlier peer message ${c.deliveryId} is unresolved (${state}); nothing new was sent. It is never resent: call again later to reconcile it.`,
            },
            true,
          );
        }
        d.peerClaims.release(b.seatName, c.deliveryId);
        const outcome = state === "unknown" ? "not_sent" : String(body?.outcome ?? "unknown");
        if (c.fingerprint === contentFingerprint(text) && c.seatId === seat) {
          return json(
            {
              ...(body ?? {}),
              schemaVersion: 1,
              deliveryId: c.deliveryId,
              outcome,
              detail: `the same text was already sent as ${c.deliveryId} (${outcome}); it is never resent`,
            },
            outcome !== "delivered",
          );
        }
        // Why it settled so, when the controller said (recipient_gone: unconfirmed, never resent).
        previous = {
          deliveryId: c.deliveryId,
          state: outcome,
          ...(typeof body?.reason === "string" ? { reason: body.reason } : {}),
        };
      }
      const claim = d.peerClaims.take(b.seatName, { deliveryId: randomUUID(), seatId: seat, binding: b.binding, text });
      if (!claim)
        return json(
          {
            schemaVersion: 1,
            outcome: "undelivered",
            reason: "claim_held",
            detail: "another peer message from this pane is being sent right now; nothing was sent",
          },
          true,
        );
      const a = await d.askLong({ op: "peer_send", binding: b.binding, recipient: seat, id: claim.deliveryId, text });
      const withPrevious = (body: Record<string, unknown>) =>
        previous && body.previous === undefined ? { ...body, previous: [previous] } : body;
      if (a.kind === "refused") {
        d.peerClaims.release(b.seatName, claim.deliveryId);
        return json(
          withPrevious({
            schemaVersion: 1,
            outcome: "undelivered",
            reason: "agent_unreachable",
            deliveryId: claim.deliveryId,
            detail: `${a.detail}; nothing was sent`,
          }),
          true,
        );
      }
      if (a.kind === "lost" || a.body.ok !== true) {
        const detail = a.kind === "lost" ? a.detail : String(a.body.detail ?? a.body.reason);
        return json(
          withPrevious({
            schemaVersion: 1,
            outcome: "uncertain",
            deliveryStage: "uncertain",
            deliveryId: claim.deliveryId,
            detail: `the answer was lost (${detail}); it is never resent: call message_peer again to reconcile it`,
          }),
          true,
        );
      }
      const body = (a.body.body ?? {}) as Record<string, unknown>;
      if (a.body.state !== "uncertain") d.peerClaims.release(b.seatName, claim.deliveryId);
      return json(withPrevious(body), body.outcome !== "delivered");
    },
  );
}
