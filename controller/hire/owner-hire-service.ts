/** The OwnerService methods for hire receipts: list (with age) and settle. */
import { create } from "@bufbuild/protobuf";
import {
  HireReceiptRowSchema,
  ListHireReceiptsResponseSchema,
  SettleHireReceiptResponseSchema,
  type ListHireReceiptsRequest,
  type ListHireReceiptsResponse,
  type SettleHireReceiptRequest,
  type SettleHireReceiptResponse,
} from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { DEFAULT_CONVERSATION } from "../leads/conversations.js";
import type { PipelineDeps } from "../delivery/message-seat.js";
import { listHireReceipts } from "./list.js";
import { settleHire } from "./settle-hire.js";

export function ownerHireMethods(pipeline: PipelineDeps) {
  return {
    async listHireReceipts(req: ListHireReceiptsRequest): Promise<ListHireReceiptsResponse> {
      const now = pipeline.now().getTime();
      const rows = await listHireReceipts(pipeline.db, req.includeSettled, req.state);
      return create(ListHireReceiptsResponseSchema, {
        receipts: rows.map((r) =>
          create(HireReceiptRowSchema, {
            hireId: r.id,
            conversationId: r.conversationId,
            machine: r.machine,
            harness: r.harness,
            state: r.state,
            seatId: r.seatId ?? "",
            ageMs: BigInt(Math.max(0, now - r.createdAt.getTime())),
            reason: r.reason ?? "",
          }),
        ),
      });
    },
    async settleHireReceipt(req: SettleHireReceiptRequest): Promise<SettleHireReceiptResponse> {
      // Errors are typed at the service boundary (fleetErrorBoundary with databaseFailure).
      return create(
        SettleHireReceiptResponseSchema,
        await settleHire(pipeline, req.hireId, req.conversationId || DEFAULT_CONVERSATION, req.disposition),
      );
    },
  };
}
