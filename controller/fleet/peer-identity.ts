/** The machine a request on the agent port speaks for: read from its client certificate only. */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { ErrorCode, FleetError, UnauthenticatedError } from "../../shared/errors.js";

export interface PeerIdentity {
  machine: string;
  serial: string;
  notAfter: Date;
}

export const peerIdentityKey = createContextKey<PeerIdentity | undefined>(undefined, {
  description: "the client certificate's machine",
});

/** The caller's machine; a request that names another machine is refused. */
export function machineOf(ctx: HandlerContext, claimed?: string): PeerIdentity {
  const id = ctx.values.get(peerIdentityKey);
  if (!id) throw new UnauthenticatedError("this service needs a fleet client certificate");
  if (claimed && claimed !== id.machine)
    throw new FleetError(
      ErrorCode.PermissionDenied,
      `this certificate is for ${id.machine}; it cannot act for ${claimed}`,
    );
  return id;
}
