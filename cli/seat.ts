/** `clankie seat add mailbox NAME`, `clankie seat list` and `clankie seat rm SEAT`. */
import { create } from "@bufbuild/protobuf";
import { AddSeatRequestSchema, RemoveSeatRequestSchema } from "../shared/gen/clankie/fleet/v1/owner_pb.js";
import { ListSeatsRequestSchema } from "../shared/gen/clankie/fleet/v1/status_pb.js";
import { InvalidArgumentError } from "../shared/errors.js";
import { assertValidName } from "../shared/ids.js";
import { SeatKind, deliveryModeWire, seatKindWire, seatStatusWire } from "../shared/verdicts.js";
import { ownerClients } from "../shared/owner-client.js";
import { emit, table, type OutputOptions } from "./output.js";
import { visibleInline } from "../shared/terminal-text.js";

export async function seatAdd(
  stateDir: string,
  controller: string | undefined,
  kind: string | undefined,
  name: string | undefined,
  opts: { machine?: string | undefined; title?: string | undefined },
  out: OutputOptions,
): Promise<void> {
  if (kind !== SeatKind.Mailbox)
    throw new InvalidArgumentError(
      `usage: clankie seat add mailbox NAME (other seat kinds are discovered from their panes)`,
    );
  if (!name) throw new InvalidArgumentError("usage: clankie seat add mailbox NAME");
  assertValidName("seat name", name);
  const { owner } = ownerClients(stateDir, controller);
  const res = await owner.addSeat(
    create(AddSeatRequestSchema, {
      name,
      kind: seatKindWire.encode(kind),
      machine: opts.machine ?? "",
      title: opts.title ?? "",
    }),
  );
  emit(
    out,
    { seatId: res.seatId, created: res.created, kind, occupantId: res.seat?.occupantId },
    () => `${res.created ? "added" : "already present:"} mailbox seat ${res.seatId}`,
  );
}

export async function seatList(stateDir: string, controller: string | undefined, out: OutputOptions): Promise<void> {
  const { status } = ownerClients(stateDir, controller);
  const res = await status.listSeats(create(ListSeatsRequestSchema, {}));
  const rows = res.seats.map((s) => ({
    id: s.id,
    kind: seatKindWire.decode(s.seat?.kind ?? 0) ?? "unknown",
    status: s.online ? (seatStatusWire.decode(s.seat?.status ?? 0) ?? "unknown") : "offline",
    online: s.online,
    // Exactly list_seats's deliveryModes: a seat that reports none shows none, never a guessed "send".
    modes: (s.seat?.inputCapabilities?.deliveryModes ?? []).map((m) => deliveryModeWire.decode(m)).join(",") || "none",
    unresolved: s.unresolvedReceipts,
    // The harness's own word that it cannot take a turn (issue 35), else empty.
    cannotWork: s.seat?.cannotWork ? `${s.seat.cannotWork.reason}: ${s.seat.cannotWork.detail}` : "",
  }));
  emit(out, { seats: rows }, () =>
    table(
      rows,
      ["id", "kind", "status", "online", "modes", "unresolved", "cannotWork"],
      "no seats yet: add a mailbox with `clankie seat add mailbox NAME`, or open Codex, Claude Code, OpenCode or Pi in a tmux or Herdr pane on a machine whose agent watches panes (clankie up finds them by itself)",
    ),
  );
}

export async function seatRemove(
  stateDir: string,
  controller: string | undefined,
  ref: string,
  out: OutputOptions,
): Promise<void> {
  const { owner } = ownerClients(stateDir, controller);
  const res = await owner.removeSeat(create(RemoveSeatRequestSchema, { seat: ref }));
  const id = visibleInline(res.seatId);
  const open = res.unresolvedReceipts;
  emit(out, { seatId: res.seatId, removed: true, unresolvedReceipts: open }, () =>
    [
      `seat ${id} removed; its receipts stay (clankie receipts list --seat ${id})`,
      ...(open ? [`${open} of them unresolved: settle with clankie seat-delivery settle ID abandoned-unknown`] : []),
    ].join("\n"),
  );
}
