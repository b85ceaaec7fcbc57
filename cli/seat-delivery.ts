/** `clankie seat-delivery list` and `clankie seat-delivery settle ID abandoned-unknown [--conversation C]`. */
import { create } from "@bufbuild/protobuf";
import { ListReceiptsRequestSchema } from "../shared/gen/clankie/fleet/v1/status_pb.js";
import { SettleSeatDeliveryRequestSchema } from "../shared/gen/clankie/fleet/v1/owner_pb.js";
import { InvalidArgumentError } from "../shared/errors.js";
import { DEFAULT_CONVERSATION } from "../controller/for-cli.js";
import { ownerClients } from "../shared/owner-client.js";
import { emit, table, type OutputOptions } from "./output.js";
import { visibleInline } from "../shared/terminal-text.js";
import { parseUuid } from "../shared/ids.js";

export async function seatDeliveryList(
  stateDir: string,
  controller: string | undefined,
  out: OutputOptions,
): Promise<void> {
  const { status } = ownerClients(stateDir, controller);
  const res = await status.listReceipts(create(ListReceiptsRequestSchema, { unresolvedOnly: true, limit: 1000 }));
  const rows = res.receipts.map((r) => ({
    id: r.deliveryId,
    conversation: r.conversationId,
    seat: r.seatId,
    state: r.state,
    ageMs: Number(r.ageMs),
  }));
  emit(out, { unresolved: rows }, () =>
    rows.length === 0
      ? "no unresolved deliveries"
      : `${table(
          rows.map((r) => ({ ...r, age: `${Math.round(r.ageMs / 1000)} s` })),
          ["id", "conversation", "seat", "state", "age"],
        )}\n(each refuses only its own resend; settle with: clankie seat-delivery settle ID abandoned-unknown [--conversation C])`,
  );
}

export async function seatDeliverySettle(
  stateDir: string,
  controller: string | undefined,
  given: string | undefined,
  disposition: string | undefined,
  conversation: string | undefined,
  out: OutputOptions,
): Promise<void> {
  if (!given || disposition !== "abandoned-unknown")
    throw new InvalidArgumentError("usage: clankie seat-delivery settle ID abandoned-unknown [--conversation C]");
  // Canonical here too, so what is printed is the id as the journal holds it (issue 32 item 4).
  const id = parseUuid("ID", given);
  const { owner } = ownerClients(stateDir, controller);
  const res = await owner.settleSeatDelivery(
    create(SettleSeatDeliveryRequestSchema, {
      deliveryId: id,
      conversationId: conversation ?? DEFAULT_CONVERSATION,
      disposition,
    }),
  );
  emit(
    out,
    { deliveryId: id, state: res.state, detail: res.detail },
    () => `${visibleInline(id)}: ${visibleInline(res.state)} — ${visibleInline(res.detail)}`,
  );
}
