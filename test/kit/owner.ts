/** Owner-side helpers for tests: add a mailbox seat and read receipts through the real services. */
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { OwnerService, AddSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import {
  StatusService,
  ListReceiptsRequestSchema,
  ListSeatsRequestSchema,
} from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { SeatKind as PbSeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { bearerHeaderInterceptor } from "../../shared/rpc/bearer-auth.js";
import { FleetService, IssueJoinTokenRequestSchema } from "../../shared/gen/clankie/fleet/v1/fleet_pb.js";

/** `ca`: the fleet CA, when the controller listens off loopback (TLS). */
export function ownerOf(url: string, ownerToken: string, ca?: string) {
  const transport = createGrpcTransport({
    baseUrl: url,
    interceptors: [bearerHeaderInterceptor(() => ownerToken)],
    ...(ca ? { nodeOptions: { ca: [ca] } } : {}),
  });
  const owner = createClient(OwnerService, transport);
  const status = createClient(StatusService, transport);
  const fleet = createClient(FleetService, transport);
  return {
    owner,
    status,
    fleet,
    /** A single-use join token for `machine`, as `clankie fleet enroll` prints. */
    enroll: async (machine: string, ttlMs = 0) =>
      (await fleet.issueJoinToken(create(IssueJoinTokenRequestSchema, { machine, ttlMs: BigInt(ttlMs) }))).token,
    addMailbox: (name: string) => owner.addSeat(create(AddSeatRequestSchema, { name, kind: PbSeatKind.MAILBOX })),
    seats: async () => (await status.listSeats(create(ListSeatsRequestSchema, {}))).seats,
    receipts: async () => (await status.listReceipts(create(ListReceiptsRequestSchema, { limit: 1000 }))).receipts,
  };
}
