/** Seats as plain JSON for MCP tools and the CLI, from the same rows the status service reads. */
import { deliveryModeWire, seatKindWire, seatStatusWire } from "../../shared/verdicts.js";
import { listSeats, type StatusDeps } from "./status-service.js";
import { hiredSeats } from "../hire/hiring-conversation.js";

export interface SeatView {
  id: string;
  machine: string;
  name: string;
  kind: string;
  status: string;
  online: boolean;
  occupantId: string;
  title: string;
  inputCapabilities: { deliveryModes: string[]; interrupt: boolean; nextTurnOnly: boolean };
  unresolvedReceipts: number;
  /** Present when the seat's harness itself said the worker cannot take a turn (issue 35), with its words. */
  cannotWork?: { reason: string; detail: string };
  /** For a seat hire_agent started, while the hired occupant holds it: who hired it. */
  hiredBy?: { conversationId: string; hireId: string };
}

export async function listSeatsView(d: StatusDeps): Promise<SeatView[]> {
  const hires = await hiredSeats(d.db);
  return (await listSeats(d)).map((r) => ({
    id: r.id,
    machine: r.machine,
    name: r.seat?.name ?? "",
    kind: seatKindWire.decode(r.seat?.kind ?? 0) ?? "unknown",
    status: r.online ? (seatStatusWire.decode(r.seat?.status ?? 0) ?? "unknown") : "offline",
    online: r.online,
    occupantId: r.seat?.occupantId ?? "",
    title: r.seat?.title ?? "",
    inputCapabilities: {
      deliveryModes: (r.seat?.inputCapabilities?.deliveryModes ?? []).map((m) => deliveryModeWire.decode(m) ?? "auto"),
      interrupt: r.seat?.inputCapabilities?.interrupt ?? false,
      nextTurnOnly: r.seat?.inputCapabilities?.nextTurnOnly ?? false,
    },
    unresolvedReceipts: r.unresolvedReceipts,
    ...(r.seat?.cannotWork
      ? { cannotWork: { reason: r.seat.cannotWork.reason, detail: r.seat.cannotWork.detail } }
      : {}),
    ...hiredView(hires.get(r.id), r.seat?.occupantId ?? ""),
  }));
}

function hiredView(
  h: { conversationId: string; hireId: string; occupantId: string | null } | undefined,
  occupantId: string,
): Pick<SeatView, "hiredBy"> {
  if (!h || (h.occupantId && h.occupantId !== occupantId)) return {};
  return { hiredBy: { conversationId: h.conversationId, hireId: h.hireId } };
}
