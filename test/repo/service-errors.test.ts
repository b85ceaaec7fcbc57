/**
 * Issue 17 item 4: one error family at the service boundary, with no raw ConnectError in the
 * services. Services (controller and agent) throw FleetErrors (shared/errors.ts), which the
 * boundary interceptor (shared/rpc/error-boundary.ts) turns into gRPC statuses. Only the RPC
 * layer itself builds a ConnectError: the two lean transports and the two client-side places
 * that stand in for a transport failure. Any other source file that constructs one fails here.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const RPC_LAYER = new Map([
  ["controller/fleet/unary-link-transport.ts", "the client transport on a reverse link: gRPC statuses are its output"],
  ["node-agent/service/unary-server.ts", "the agent's lean unary server: gRPC statuses are its output"],
  [
    "controller/fleet/reverse-links.ts",
    "client side: no live link is the transport's own failure, before anything is sent",
  ],
  ["controller/fleet/gateway-tunnel.ts", "the gateway tunnel's server: gRPC statuses are its answers' trailers"],
  [
    "node-agent/service/gateway-tunnel.ts",
    "the gateway tunnel's client: a closed tunnel or a deadline is the transport's own failure",
  ],
  [
    "controller/hire/hire-agent.ts",
    "client side: a suite's fault point drops the agent's answer the way a cut link would",
  ],
]);

function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}

export function rawConnectErrors(files: { path: string; text: string }[]): string[] {
  return files.filter((f) => !RPC_LAYER.has(f.path) && /new\s+ConnectError\s*\(/.test(code(f.text))).map((f) => f.path);
}

function sources(): { path: string; text: string }[] {
  return ["controller", "node-agent", "cli", "bridge", "worker"].flatMap((d) =>
    readdirSync(join(ROOT, d), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".ts"))
      .map((f) => ({ path: join(d, f), text: readFileSync(join(ROOT, d, f), "utf8") })),
  );
}

describe("one error family at the service boundary (issue 17 item 4)", () => {
  it("the check finds a service that builds its own ConnectError, and not one in a comment", () => {
    const service = { path: "controller/services/x.ts", text: 'throw new ConnectError("no", Code.InvalidArgument);' };
    const comment = {
      path: "controller/services/y.ts",
      text: "// never `new ConnectError(...)` here\nthrow new InvalidArgumentError('no');",
    };
    expect(rawConnectErrors([service, comment])).toEqual(["controller/services/x.ts"]);
  });

  it("issue 17: no source outside the RPC layer constructs a ConnectError", () => {
    expect(rawConnectErrors(sources())).toEqual([]);
  });

  it("the RPC layer's exceptions still exist (a stale entry is removed, not kept)", () => {
    const paths = new Set(sources().map((f) => f.path));
    expect([...RPC_LAYER.keys()].filter((p) => !paths.has(p))).toEqual([]);
  });
});
