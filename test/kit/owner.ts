/** Owner-side helpers for tests: add a mailbox seat and read receipts through the real services. */
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { OwnerService, AddSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { StatusService, ListReceiptsRequestSchema, ListSeatsRequestSchema } from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { SeatKind as PbSeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { bearerHeaderInterceptor } from "../../shared/rpc/bearer-auth.js";

export function ownerOf(url: string, ownerToken: string) {
  const transport = createGrpcTransport({ baseUrl: url, interceptors: [bearerHeaderInterceptor(() => ownerToken)] });
  const owner = createClient(OwnerService, transport);
  const status = createClient(StatusService, transport);
  return {
    owner,
    status,
    addMailbox: (name: string) => owner.addSeat(create(AddSeatRequestSchema, { name, kind: PbSeatKind.MAILBOX })),
    seats: async () => (await status.listSeats(create(ListSeatsRequestSchema, {}))).seats,
    receipts: async () => (await status.listReceipts(create(ListReceiptsRequestSchema, { limit: 1000 }))).receipts,
  };
}
