/** The owner's gRPC calls the bench needs: add mailbox seats through the real OwnerService. */
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { OwnerService, AddSeatRequestSchema } from "../shared/gen/clankie/fleet/v1/owner_pb.js";
import { SeatKind } from "../shared/gen/clankie/fleet/v1/seat_pb.js";
import { bearerHeaderInterceptor } from "../shared/rpc/bearer-auth.js";
import { FleetService, IssueJoinTokenRequestSchema } from "../shared/gen/clankie/fleet/v1/fleet_pb.js";

/** A freshly spawned agent registers a moment later (seconds on a loaded box): keep asking this long. */
const REGISTRATION_WAIT_MS = 60_000;

export function ownerClient(url: string, ownerToken: string) {
  const owner = createClient(
    OwnerService,
    createGrpcTransport({ baseUrl: url, interceptors: [bearerHeaderInterceptor(() => ownerToken)] }),
  );
  const fleet = createClient(
    FleetService,
    createGrpcTransport({ baseUrl: url, interceptors: [bearerHeaderInterceptor(() => ownerToken)] }),
  );
  return {
    /** A join token for a bench agent (it goes in the agent's environment, never argv). */
    async enroll(machine: string): Promise<string> {
      return (await fleet.issueJoinToken(create(IssueJoinTokenRequestSchema, { machine }))).token;
    },
    async addMailbox(machine: string, name: string): Promise<string> {
      const deadline = Date.now() + REGISTRATION_WAIT_MS;
      for (;;) {
        try {
          return (await owner.addSeat(create(AddSeatRequestSchema, { machine, name, kind: SeatKind.MAILBOX }))).seatId;
        } catch (e) {
          if (Date.now() > deadline) throw e;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    },
  };
}
