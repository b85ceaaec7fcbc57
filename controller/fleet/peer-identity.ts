/** The machine a request on the agent port speaks for: read from its client certificate only. */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";

export interface PeerIdentity {
  machine: string;
  serial: string;
  notAfter: Date;
}

export const peerIdentityKey = createContextKey<PeerIdentity | undefined>(undefined, { description: "the client certificate's machine" });

/** The caller's machine; a request that names another machine is refused. */
export function machineOf(ctx: HandlerContext, claimed?: string): PeerIdentity {
  const id = ctx.values.get(peerIdentityKey);
  if (!id) throw new ConnectError("this service needs a fleet client certificate", Code.Unauthenticated);
  if (claimed && claimed !== id.machine) throw new ConnectError(`this certificate is for ${id.machine}; it cannot act for ${claimed}`, Code.PermissionDenied);
  return id;
}
