/**
 * What an MCP client that starts OAuth discovery learns from this server: its 401 carries a
 * Bearer challenge naming the protected-resource metadata (RFC 9728), and that metadata says a
 * bearer token in the Authorization header, from no authorization server: the lead token that
 * `clankie up` or `clankie lead token` prints. There is no OAuth here, and the metadata says so
 * instead of leaving the client to guess from a 404.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

export const PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource";
const AUTHORIZATION_SERVER_PATHS = ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"];
const HOW =
  "use the lead token that `clankie up` or `clankie lead token --conversation ID` prints, as Authorization: Bearer <token>; this server does not do OAuth";

function origin(req: IncomingMessage): string {
  return `http://${req.headers.host ?? "127.0.0.1"}`;
}

/** The WWW-Authenticate value for a refused MCP request. */
export function bearerChallenge(req: IncomingMessage, resourcePath: string): string {
  const presented = typeof req.headers.authorization === "string" && req.headers.authorization.length > 0;
  const parts = ['Bearer realm="clankie"'];
  if (presented) parts.push('error="invalid_token"');
  parts.push(`error_description="${presented ? "wrong" : "missing"} lead token: ${HOW.replace(/"/g, "'")}"`);
  parts.push(`resource_metadata="${origin(req)}${PROTECTED_RESOURCE_PATH}${resourcePath}"`);
  return parts.join(", ");
}

export function isDiscoveryPath(path: string): boolean {
  return (
    path === PROTECTED_RESOURCE_PATH ||
    path.startsWith(`${PROTECTED_RESOURCE_PATH}/`) ||
    AUTHORIZATION_SERVER_PATHS.some((p) => path === p || path.startsWith(`${p}/`))
  );
}

export function serveDiscovery(req: IncomingMessage, res: ServerResponse, path: string, resourcePath: string): void {
  const json = (status: number, body: unknown): void =>
    void res
      .writeHead(status, {
        "content-type": "application/json",
        "cache-control": "no-store",
        "access-control-allow-origin": "*",
      })
      .end(JSON.stringify(body));
  if (path === PROTECTED_RESOURCE_PATH || path === `${PROTECTED_RESOURCE_PATH}${resourcePath}`) {
    return json(200, {
      resource: `${origin(req)}${resourcePath}`,
      resource_name: "Clankie Fleet (lead MCP endpoint)",
      authorization_servers: [],
      bearer_methods_supported: ["header"],
      description: `A static bearer token, not OAuth: ${HOW}.`,
    });
  }
  json(404, { error: "not_supported", error_description: `no OAuth authorization server: ${HOW}.` });
}
