/** OwnerService: the owner's operations behind the clankie CLI. */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, FleetError } from "../../shared/errors.js";
import { CreateSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import {
  AddSeatResponseSchema,
  IssueLeadTokenResponseSchema,
  type OwnerService,
  ReconcileDeliveryResponseSchema,
  RemoveSeatResponseSchema,
  RevokeLeadTokenResponseSchema,
  SettleSeatDeliveryResponseSchema,
} from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { isValidName, seatId } from "../../shared/ids.js";
import type { Db } from "../db/open.js";
import type { AgentClients } from "../nodes/agent-clients.js";
import type { Registry } from "../nodes/registry.js";
import {
  type ConversationAuth,
  DEFAULT_CONVERSATION,
  issueLeadToken,
  revokeLeadToken,
} from "../leads/conversations.js";
import type { PipelineDeps } from "../delivery/pipeline.js";
import type { FleetSecrets } from "../leads/fleet-secrets.js";
import { ownerSettle } from "../delivery/owner-settle.js";
import { ownerHireMethods } from "../hire/owner-hire-service.js";

import { peerSettingMethods } from "../workers/peer-setting.js";
import { reconcileSeatCall } from "../delivery/reconcile.js";
import { removeSeat } from "../fleet/removals.js";
import { quoteInput } from "../../shared/public-text.js";

export interface OwnerDeps {
  pipeline: PipelineDeps;
  db: Db;
  registry: Registry;
  agents: AgentClients;
  conversations: ConversationAuth;
  /** Where global-default's rotated token is kept for every replica (ADR 0037). */
  secrets?: FleetSecrets;
}

export function createOwnerService(d: OwnerDeps): ServiceImpl<typeof OwnerService> {
  // Errors are typed once, at the service boundary (fleetErrorBoundary with databaseFailure).
  return {
    ...peerSettingMethods(d.db, d.pipeline.now),
    ...ownerHireMethods(d.pipeline),
    async addSeat(req) {
      if (!isValidName(req.name))
        throw new FleetError(ErrorCode.InvalidArgument, "seat name must be 1-64 letters, digits, '.', '-' or '_'");
      const all = await d.registry.machines();
      const online = all.filter((m) => d.registry.isOnline(m));
      const machine = req.machine
        ? all.find((m) => m.name === req.machine)
        : online.length === 1
          ? online[0]
          : undefined;
      if (!machine) {
        const detail = req.machine
          ? `no machine named ${quoteInput(req.machine)} is registered`
          : `name the machine with --machine (online: ${online.map((m) => m.name).join(", ") || "none"})`;
        throw new FleetError(req.machine ? ErrorCode.NotFound : ErrorCode.FailedPrecondition, detail);
      }
      const conn = d.agents.get(machine.name, machine.endpoint, machine.agentToken);
      const res = await conn.client.createSeat(
        create(CreateSeatRequestSchema, { name: req.name, kind: req.kind, title: req.title }),
        { timeoutMs: 10_000 },
      );
      if (!res.seat) throw new FleetError(ErrorCode.Internal, "the agent answered without a seat");
      await d.registry.upsertSeat(machine.name, res.seat);
      return create(AddSeatResponseSchema, {
        seatId: seatId(machine.name, res.seat.name),
        seat: res.seat,
        created: res.created,
      });
    },
    async removeSeat(req) {
      const r = await removeSeat(d.db, d.registry, req.seat);
      return create(RemoveSeatResponseSchema, { seatId: r.seatId, unresolvedReceipts: r.unresolved });
    },
    async settleSeatDelivery(req) {
      const r = await ownerSettle(
        d.pipeline,
        req.deliveryId,
        req.conversationId || DEFAULT_CONVERSATION,
        req.disposition,
      );
      return create(SettleSeatDeliveryResponseSchema, r);
    },
    async reconcileDelivery(req) {
      const r = await reconcileSeatCall(d.pipeline, req.conversationId || DEFAULT_CONVERSATION, {
        deliveryId: req.deliveryId,
      });
      const body = r.body as { outcome?: string; detail?: string };
      return create(ReconcileDeliveryResponseSchema, {
        outcome: body.outcome ?? r.state,
        detail: body.detail ?? "",
        bodyJson: JSON.stringify(r.body),
      });
    },
    async issueLeadToken(req) {
      const { token, replaced } = await issueLeadToken(
        d.db,
        req.conversationId,
        undefined,
        req.keepLiveToken,
        d.secrets,
      );
      d.conversations.forget();
      return create(IssueLeadTokenResponseSchema, { conversationId: req.conversationId, token, replaced });
    },
    async revokeLeadToken(req) {
      const revoked = await revokeLeadToken(d.db, req.conversationId);
      d.conversations.forget();
      return create(RevokeLeadTokenResponseSchema, { conversationId: req.conversationId, revoked });
    },
  };
}
