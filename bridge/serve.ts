/**
 * `clankie mcp`: the stdio MCP server a lead's harness spawns. It offers the controller's
 * lead tools exactly as the controller lists them and forwards each call over streamable
 * HTTP with the lead token, which therefore never appears on a command line.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  ListToolsResultSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../shared/logger.js";
import { bridgeTarget, type BridgeFlags } from "./target.js";
import { PostWatch } from "./post-watch.js";
import { Generations, LeadTokenRejectedError } from "./generations.js";
import { CallForwarder } from "./forward-call.js";
import { wireError } from "./wire-error.js";

export interface RunningBridge {
  close(): Promise<void>;
}

export async function serveBridge(flags: BridgeFlags, logger: Logger, version: string): Promise<RunningBridge> {
  const target = await bridgeTarget(flags);
  const watch = new PostWatch();
  const gens = new Generations(target, watch, logger, version);
  const forwarder = new CallForwarder(gens, watch, logger);

  const server = new Server({ name: "clankie", version }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async (req) => {
    // Read-only, so an unknown session or a lost answer may simply be asked again, once.
    for (let attempt = 1; ; attempt++) {
      const gen = await gens.acquire().catch((e: Error) => {
        throw wireError(e);
      });
      try {
        return await gen.client.request({ method: "tools/list", params: req.params ?? {} }, ListToolsResultSchema);
      } catch (e) {
        gens.retire(gen, `tools/list failed: ${(e as Error).message}`);
        if (attempt === 2) {
          const unread = `the controller's tool list could not be read: ${(e as Error).message}`;
          throw wireError(e instanceof McpError ? e : unread);
        }
      } finally {
        gens.release(gen);
      }
    }
  });
  server.setRequestHandler(CallToolRequestSchema, async (req) =>
    forwarder.call(req.params.name, req.params.arguments, req.params._meta),
  );

  // Open the first session now, so the harness's first tools/list does not wait for it.
  void gens
    .acquire()
    .then((g) => gens.release(g))
    .catch((e: Error) =>
      e instanceof LeadTokenRejectedError
        ? logger.error("the controller rejected the lead token (HTTP 401)", {
            target: target.describe(),
            error: e.message,
          })
        : logger.warn("the controller is not reachable yet", { target: target.describe(), error: e.message }),
    );

  await server.connect(new StdioServerTransport());
  logger.info("serving the controller's lead tools on stdio", { target: target.describe() });
  return {
    async close() {
      await server.close().catch(() => {});
      await gens.close();
    },
  };
}
