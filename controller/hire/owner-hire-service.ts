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
import { listHireReceipts } from "./list.js";
import { settleHire, type SettleHireDeps } from "./settle-hire.js";

export function ownerHireMethods(hires: SettleHireDeps) {
  return {
    async listHireReceipts(req: ListHireReceiptsRequest): Promise<ListHireReceiptsResponse> {
      const now = hires.now().getTime();
      const rows = await listHireReceipts(hires.db, req.includeSettled, req.state);
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
        await settleHire(hires, req.hireId, req.conversationId || DEFAULT_CONVERSATION, req.disposition),
      );
    },
  };
}
