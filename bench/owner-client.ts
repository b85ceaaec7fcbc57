/** The owner's gRPC calls the bench needs: add mailbox seats through the real OwnerService. */
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { OwnerService, AddSeatRequestSchema } from "../shared/gen/clankie/fleet/v1/owner_pb.js";
import { SeatKind } from "../shared/gen/clankie/fleet/v1/seat_pb.js";
import { bearerHeaderInterceptor } from "../shared/rpc/bearer-auth.js";

export function ownerClient(url: string, ownerToken: string) {
  const owner = createClient(OwnerService, createGrpcTransport({ baseUrl: url, interceptors: [bearerHeaderInterceptor(() => ownerToken)] }));
  return {
    addMailbox: async (machine: string, name: string) => (await owner.addSeat(create(AddSeatRequestSchema, { machine, name, kind: SeatKind.MAILBOX }))).seatId,
  };
}
