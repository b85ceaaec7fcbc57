/**
 * One warm HTTP/2 connection per node agent. A delivery is one unary call on it. Whether
 * a failure happened before the request could have reached the agent decides between a
 * definite not-sent and an uncertain outcome, so the connection is opened explicitly
 * before the call.
 */
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { AgentService } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { bearerHeaderInterceptor } from "../../shared/rpc/bearer-auth.js";
import { traceSendInterceptor } from "../../shared/rpc/trace-context.js";

export interface AgentConnection {
  readonly machine: string;
  readonly endpoint: string;
  readonly client: Client<typeof AgentService>;
  /** Open (or verify) the connection; false when the agent cannot be reached at all. */
  connect(): Promise<boolean>;
  close(): void;
}

/** Where an agent's calls ride when it dialed in (the fleet's reverse links, ADR 0021). */
export interface LinkSource {
  connection(machine: string, token: string): AgentConnection;
}

export class AgentClients {
  private readonly byMachine = new Map<string, AgentConnection & { token: string }>();

  constructor(private readonly links?: LinkSource) {}

  /** The connection for a machine, created or replaced when its endpoint or token changed. */
  get(machine: string, endpoint: string, token: string): AgentConnection {
    if (this.links) return this.links.connection(machine, token);
    const existing = this.byMachine.get(machine);
    if (existing && existing.endpoint === endpoint && existing.token === token) return existing;
    existing?.close();
    const sessionManager = new Http2SessionManager(endpoint, {
      pingIntervalMs: 30_000,
      pingTimeoutMs: 5_000,
      idleConnectionTimeoutMs: 15 * 60_000,
    });
    const transport = createGrpcTransport({
      baseUrl: endpoint,
      sessionManager,
      interceptors: [bearerHeaderInterceptor(() => token), traceSendInterceptor()],
    });
    const conn = {
      machine,
      endpoint,
      token,
      client: createClient(AgentService, transport),
      async connect() {
        return (await sessionManager.connect()) !== "error";
      },
      close() {
        sessionManager.abort();
      },
    };
    this.byMachine.set(machine, conn);
    return conn;
  }

  closeAll(): void {
    for (const c of this.byMachine.values()) c.close();
    this.byMachine.clear();
  }
}
