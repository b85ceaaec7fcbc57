/** A server interceptor that admits a call only with the bearer token its service requires. */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { bearerFrom } from "../tokens.js";

/** Returns true when `token` may call `serviceTypeName`; services it returns undefined for are open. */
export type TokenCheck = (serviceTypeName: string, token: string | undefined) => boolean | undefined;

export function bearerAuthInterceptor(check: TokenCheck): Interceptor {
  return (next) => async (req) => {
    const verdict = check(req.service.typeName, bearerFrom(req.header.get("authorization")));
    if (verdict === false) throw new ConnectError("missing or wrong bearer token", Code.Unauthenticated);
    return next(req);
  };
}

/** A client interceptor that adds `Authorization: Bearer <token>`. */
export function bearerHeaderInterceptor(token: () => string): Interceptor {
  return (next) => async (req) => {
    req.header.set("authorization", `Bearer ${token()}`);
    return next(req);
  };
}
