/**
 * The service boundary's one error family: services throw FleetErrors (shared/errors.ts); this
 * server interceptor turns them into the matching gRPC/Connect status, so no service builds a
 * ConnectError itself. Whatever else escapes a service (a driver error, a TypeError) is typed
 * internal and its text goes through the same scrubbing (FleetError.toConnectError →
 * publicErrorText), so no SQL, parameters or identifiers ever reach a caller. A ConnectError
 * keeps its code (the RPC library's own, e.g. RESOURCE_EXHAUSTED for an over-long body) but
 * its message is scrubbed too. `typeFailure` lets the caller type what it knows first (the
 * controller: a database failure is journal_unavailable, controller/db/error-text.ts).
 */
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { FleetError } from "../errors.js";
import { publicErrorText } from "../public-text.js";

export function fleetErrorBoundary(typeFailure: (e: unknown) => unknown = (e) => e): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (e) {
      if (e instanceof ConnectError) {
        const scrubbed = publicErrorText(e.rawMessage);
        throw scrubbed === e.rawMessage ? e : new ConnectError(scrubbed, e.code, e.metadata, undefined, e);
      }
      throw FleetError.from(typeFailure(e)).toConnectError();
    }
  };
}
