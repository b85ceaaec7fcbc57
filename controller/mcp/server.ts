/**
 * The leads' MCP endpoint (streamable HTTP, one McpServer per session). Every request
 * carries a lead bearer token; a session is bound to the token that opened it (and so to its
 * conversation) and answers 404 to any other token, so a conversation only ever sees its own
 * receipts. Session ids are signed for the fleet (session-ids.ts) and each session's life is a
 * row in the journal (fleet-sessions.ts): a replica that did not open a session resumes it from
 * its id while the fleet has it, so any replica serves any session (ADR 0037).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  isInitializeRequest,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
import { bearerFrom, tokenHash } from "../../shared/tokens.js";
import type { Logger } from "../../shared/logger.js";
import type { ConversationAuth } from "../leads/conversations.js";
import type { PipelineDeps } from "../delivery/pipeline.js";
import type { HireDeps } from "../hire/hire-agent.js";
import type { StatusDeps } from "../services/status-service.js";
import { registerMessageSeat } from "./tools/message-seat.js";
import { registerReconcileSeatCall } from "./tools/reconcile-seat-call.js";
import { registerListSeats } from "./tools/list-seats.js";
import { registerWorkerReports } from "./tools/worker-reports.js";
import { registerStopTask } from "./tools/stop-task.js";
import { readBodyBounded } from "../../shared/read-body.js";
import { SessionTable } from "./session-table.js";
import type { SessionIds } from "./session-ids.js";
import { EndedSessions, FleetSessions } from "./fleet-sessions.js";
import { registerHireAgent } from "./tools/hire-agent.js";
import { bearerChallenge } from "../http/bearer-discovery.js";

export const MCP_PATH = "/mcp";
export const MAX_BODY_BYTES = 1 << 20;

interface Session {
  conversationId: string;
  /** The hash of the lead token that opened it: no other token may use it. */
  tokenHash: string;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  close(): Promise<void>;
}

export interface McpEndpoint {
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  closeAll(): Promise<void>;
  sessionCount(): number;
}

function jsonRpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  // data.admitted=false is the explicit "refused before tool admission" that lets `clankie mcp` retry an unknown session once (bridge/).
  res.end(
    JSON.stringify({
      jsonrpc: "2.0",
      error: {
        code,
        message,
        data: {
          admitted: false,
          reason: /^[a-z_]+(?=:)/.exec(message)?.[0] ?? (status === 401 ? "unauthenticated" : "bad_request"),
        },
      },
      id: null,
    }),
  );
}

export interface McpLimits {
  /** A session unused this long is closed. */
  sessionIdleMs: number;
  /** Sessions one conversation may hold at once. */
  sessionsPerConversation: number;
}

/**
 * The SDK opens a session only through an initialize request. A session another replica opened is
 * resumed by setting the two fields that initialize sets, on the pinned SDK (1.32); the unit test
 * test/unit/controller/mcp/session-ids.test.ts fails if an SDK upgrade moves them.
 */
export function resumeSession(transport: StreamableHTTPServerTransport, id: string): void {
  const web = (transport as unknown as { _webStandardTransport?: { sessionId?: string; _initialized?: boolean } })
    ._webStandardTransport;
  if (web?._initialized !== false)
    throw new Error("this MCP SDK's transport cannot resume a session (StreamableHTTPServerTransport internals moved)");
  web.sessionId = id;
  web._initialized = true;
}

/** The version initialize agrees on (the SDK's own rule, Server._oninitialize). */
function negotiated(body: unknown): string {
  const asked = (body as { params?: { protocolVersion?: unknown } }).params?.protocolVersion;
  return typeof asked === "string" && SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION;
}

export function createMcpEndpoint(deps: {
  pipeline: PipelineDeps;
  status: StatusDeps;
  conversations: ConversationAuth;
  sessionIds: SessionIds;
  logger: Logger;
  version: string;
  /** hire_agent's dependencies, built once in main.ts. */
  hires: HireDeps;
  limits?: McpLimits;
}): McpEndpoint {
  const limits = deps.limits ?? { sessionIdleMs: 30 * 60_000, sessionsPerConversation: 64 };
  const fleet = new FleetSessions(deps.pipeline.db, limits.sessionIdleMs, limits.sessionsPerConversation);
  // The fleet's bookkeeping is off the request's path: a failure costs other replicas the session, never this call.
  const quietly = (what: string) => (e: unknown) => deps.logger.warn(what, { error: (e as Error).message });
  const ended = new EndedSessions();
  const end = (id: string) => {
    ended.add(id);
    sessions.drop(id);
  };
  const sessions: SessionTable<Session> = new SessionTable<Session>(
    limits.sessionIdleMs,
    limits.sessionsPerConversation,
    undefined,
    {
      // Over the cap it is over; idle here, only if no other replica used it meanwhile.
      closed: (id, why) => {
        if (why === "cap") ended.add(id);
        void fleet
          .closed(id, why)
          .then((over) => over && ended.add(id), quietly("an MCP session's close could not be recorded for the fleet"));
      },
      inUse: (ids) =>
        void fleet
          .touch(ids)
          .then((gone) => gone.forEach(end), quietly("MCP sessions' use could not be recorded for the fleet")),
    },
  );
  // Responses still being written; a stop lets them finish so an in-flight call's answer is not lost.
  const open = new Set<ServerResponse>();

  // `mint` names the session: a signed new id at initialize, or the id of a session being resumed.
  const newSession = (conversationId: string, hash: string, mint: () => string): Session => {
    const server = new McpServer({ name: "clankie-fleet", version: deps.version }, { capabilities: { tools: {} } });
    registerMessageSeat(server, deps.pipeline, conversationId);
    registerReconcileSeatCall(server, deps.pipeline, conversationId);
    registerListSeats(server, deps.status);
    registerWorkerReports(server, deps.pipeline, conversationId);
    registerStopTask(server, deps.pipeline, conversationId);
    registerHireAgent(server, deps.hires, conversationId);
    const session: Session = {
      conversationId,
      tokenHash: hash,
      server,
      close: () => server.close(),
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: mint,
        // Each answer is one JSON body, not an SSE stream. The SDK client leaves a call pending
        // until its timeout (60 s by default) when a POST's answer stream ends without the
        // result, as when this controller dies mid-call; with no headers sent before the
        // answer, the same death rejects the call at once, and the lead can reconcile it.
        // No lead tool sends a notification during a call. (verify: 75 of 10,000 calls sat out
        // the leads' 20 s timeout after the controller kills, in a 2026-12-02 run.)
        enableJsonResponse: true,
        onsessioninitialized: async (id) => {
          sessions.add(id, session);
          // Recorded before its id is answered (a resumed session never comes here: it has no initialize).
          const over = await fleet.opened(id, conversationId).catch((e: unknown) => {
            quietly("a new MCP session could not be recorded for the fleet: only this replica serves it")(e);
            return [];
          });
          for (const old of over) end(old);
        },
      }),
    };
    session.transport.onclose = () => {
      // Only its own slot: a session that lost a resume race closes without touching the winner's.
      const id = session.transport.sessionId;
      if (id && sessions.get(id) === session) sessions.delete(id);
    };
    return session;
  };

  const tooManySessions = (res: ServerResponse) =>
    jsonRpcError(
      res,
      429,
      -32000,
      `too_many_sessions: this conversation has ${limits.sessionsPerConversation} MCP sessions, all in use`,
    );

  // Two requests may resume one session at once: the first one in the table serves both.
  const resumed = async (conversationId: string, hash: string, id: string): Promise<Session> => {
    const session = newSession(conversationId, hash, () => id);
    resumeSession(session.transport, id);
    await session.server.connect(session.transport);
    const raced = sessions.get(id);
    if (raced) {
      void session.server.close().catch(() => {});
      return raced;
    }
    sessions.add(id, session);
    return session;
  };

  return {
    sessionCount: () => sessions.size,
    async handle(req, res) {
      if (req.method === "POST") {
        open.add(res);
        res.once("close", () => open.delete(res));
      }
      let conversationId: string | undefined;
      const bearer = bearerFrom(req.headers.authorization);
      try {
        conversationId = await deps.conversations.conversationFor(bearer);
      } catch (e) {
        // The token could not be looked up: that is the journal's failure, not the caller's token.
        deps.logger.warn("lead token lookup failed", { error: (e as Error).message });
        return jsonRpcError(
          res,
          503,
          -32000,
          "journal_unavailable: the token could not be checked because the journal is unavailable; nothing was dispatched",
          { "retry-after": "1" },
        );
      }
      if (!conversationId) {
        return jsonRpcError(
          res,
          401,
          -32001,
          "missing or wrong lead bearer token (Authorization: Bearer <lead token>; no OAuth)",
          { "www-authenticate": bearerChallenge(req, MCP_PATH) },
        );
      }
      if (deps.pipeline.isStopping())
        return jsonRpcError(res, 503, -32000, "service_stopping: the controller is stopping; nothing was dispatched");
      const sessionHeader = req.headers["mcp-session-id"];
      const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
      let body: unknown;
      if (req.method === "POST") {
        const read = await readBodyBounded(req, MAX_BODY_BYTES);
        if (read.kind === "aborted") return void res.destroy();
        if (read.kind === "too_large")
          return jsonRpcError(
            res,
            413,
            -32600,
            `request_too_large: an MCP request body is at most ${MAX_BODY_BYTES} bytes`,
          );
        try {
          body = JSON.parse(read.bytes.toString("utf8"));
        } catch (e) {
          return jsonRpcError(res, 400, -32700, `parse error: ${(e as Error).message}`);
        }
      }
      const hash = tokenHash(bearer!);
      if (sessionId) {
        let session = sessions.get(sessionId);
        // Another token's session is indistinguishable from an unknown one.
        if (session && (session.conversationId !== conversationId || session.tokenHash !== hash)) session = undefined;
        if (!session && !sessions.get(sessionId) && !ended.has(sessionId)) {
          // Opened by another replica (or by this one before a restart): resumed from its signed id.
          const claim = deps.sessionIds.verify(sessionId, hash);
          let live = false;
          try {
            // Only an id this fleet signed for this token costs a query.
            live = claim?.conversationId === conversationId && (await fleet.live(sessionId)) === conversationId;
          } catch (e) {
            deps.logger.warn("an MCP session could not be looked up", { error: (e as Error).message });
            return jsonRpcError(
              res,
              503,
              -32000,
              "journal_unavailable: the session could not be looked up because the journal is unavailable; nothing was dispatched",
              { "retry-after": "1" },
            );
          }
          if (live) {
            if (!sessions.makeRoom(conversationId)) return tooManySessions(res);
            session = await resumed(conversationId, hash, sessionId);
          }
        }
        if (!session) return jsonRpcError(res, 404, -32001, "unknown_session: start a new MCP session");
        // The client ends its session: over on every replica before the answer says so.
        if (req.method === "DELETE") {
          ended.add(sessionId);
          await fleet
            .closed(sessionId, "client")
            .catch(quietly("an MCP session's end could not be recorded for the fleet"));
        }
        // In use until its answer (or stream) is over: an idle sweep never cuts a call short.
        const served = session;
        await sessions.use(sessionId, async () => {
          const over = new Promise<void>((r) =>
            res.writableEnded || res.destroyed ? r() : res.once("close", () => r()),
          );
          await served.transport.handleRequest(req, res, body);
          await over;
        });
        return;
      }
      if (req.method !== "POST" || !isInitializeRequest(body)) {
        return jsonRpcError(res, 400, -32000, "no mcp-session-id: the first request must be initialize");
      }
      if (!sessions.makeRoom(conversationId)) return tooManySessions(res);
      const claim = { conversationId, protocolVersion: negotiated(body) };
      const session = newSession(conversationId, hash, () => deps.sessionIds.mint(claim, hash));
      await session.server.connect(session.transport);
      await session.transport.handleRequest(req, res, body);
    },
    async closeAll() {
      const deadline = Date.now() + 2000;
      while (open.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await Promise.allSettled(sessions.drain().map((s) => s.server.close()));
    },
  };
}
