/**
 * The node agent's composition root: seat book, adapters, gRPC service on loopback,
 * and the link to the controller.
 */
import { createServer, type Http2Server } from "node:http2";
import { LinkRoundTrips } from "./service/link-round-trips.js";
import { SeatLocks } from "./seats/seat-locks.js";
import { startSeatStatusWatch } from "./seats/seat-status-watch.js";
import type { AddressInfo, Socket } from "node:net";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { AgentService } from "../shared/gen/clankie/fleet/v1/agent_pb.js";
import { bearerAuthInterceptor } from "../shared/rpc/bearer-auth.js";
import { newToken, tokensEqual } from "../shared/tokens.js";
import type { Logger } from "../shared/logger.js";
import type { AgentConfig } from "./config.js";
import { SeatBook } from "./seats/seat-book.js";
import { MailboxStore } from "./mailbox/store.js";
import { MailboxAdapter } from "./harnesses/mailbox.js";
import { AdapterRegistry } from "./harnesses/registry.js";
import { CodexAdapter } from "./harnesses/codex.js";
import { createNativeAdapters } from "./harnesses/native-adapters.js";
import { createPaneHost } from "./panes/select-host.js";
import { startSeatDiscovery, type SeatDiscovery } from "./seats/discovery.js";
import { systemMonotonicClock, type MonotonicClock } from "./proofs/proof.js";
import { selectProofProvider } from "./proofs/select.js";
import { createAgentService } from "./service/agent-service.js";
import { startControllerLink, type ControllerLink } from "./service/controller-link.js";
import { startReportForwarder } from "./service/report-forwarder.js";
import { Outbox } from "./mailbox/outbox.js";
import { toWireSeat } from "./service/wire-seat.js";

export const AGENT_VERSION = "0.1.0";

export interface RunningAgent {
  readonly endpoint: string;
  readonly machine: string;
  readonly link: ControllerLink;
  close(): Promise<void>;
}

export async function startAgent(config: AgentConfig, logger: Logger, clock: MonotonicClock = systemMonotonicClock): Promise<RunningAgent> {
  mkdirSync(config.mailboxDir, { recursive: true, mode: 0o700 });
  const seats = new SeatBook(config.stateDir);
  const mailboxes = new MailboxStore(config.mailboxDir);
  const paneHost = createPaneHost(config.paneHost);
  // Kernel facts for this OS: a Codex seat over TCP is proven by the pane proof before each write.
  const codex = new CodexAdapter({ clock, paneHost, proofs: selectProofProvider(process.platform, clock) });
  const adapters = new AdapterRegistry().register(new MailboxAdapter(mailboxes, clock)).register(codex);
  const native = createNativeAdapters({
    clock,
    stateDir: config.stateDir,
    paneHost,
    tmuxServer: config.paneHost.kind === "tmux" ? { socketPath: config.paneHost.socketPath } : undefined,
    stillOccupied: (seat) => seats.get(seat.name)?.occupantId === seat.occupantId,
  });
  for (const a of native.adapters) adapters.register(a);
  // A fresh token per process: only the controller this agent registered with can call it.
  const agentToken = newToken("agent");

  const locks = new SeatLocks();
  // The controller's sessions are pinged so the freshness gate bounds transit by the real link.
  const roundTrips = new LinkRoundTrips();
  const handler = connectNodeAdapter({
    routes: (router) => router.service(AgentService, createAgentService({ seats, adapters, clock, mailboxes, roundTrips, locks })),
    interceptors: [bearerAuthInterceptor((_service, token) => tokensEqual(agentToken, token))],
  });
  const server: Http2Server = createServer(handler);
  roundTrips.watch(server);
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    // Small frames (a verdict, a PING ack) must not wait on Nagle for the peer's delayed ACK.
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const endpoint = `http://${host}:${port}`;
  logger.info("agent listening", { endpoint, machine: config.machine });

  const wireSeats = async () =>
    Promise.all(
      seats.all().map(async (s) => {
        const adapter = adapters.get(s.kind);
        const snapshot = adapter
          ? (await locks.run(s.name, () => adapter.inspect(s))).snapshot
          : { status: "unknown" as const, occupantId: s.occupantId, inputCapabilities: { deliveryModes: [], interrupt: false, nextTurnOnly: false } };
        return toWireSeat(s, snapshot);
      }),
    );

  const link = startControllerLink({
    controllerUrl: config.controllerUrl,
    fleetToken: config.fleetToken,
    machine: config.machine,
    endpoint,
    agentToken,
    instanceId: randomUUID(),
    platform: process.platform,
    agentVersion: AGENT_VERSION,
    seats: wireSeats,
    logger,
  });
  const report = async (wire: Awaited<ReturnType<typeof wireSeats>>) => {
    await link.reportSeats(wire);
    watch.reported(wire);
  };
  const offSeats = seats.onChange(() => {
    wireSeats()
      .then(report)
      .catch((e: Error) => logger.warn("seat report failed", { error: e.message }));
  });
  // Status and capabilities change without the seat book changing (a turn ends, control is lost).
  const watch = startSeatStatusWatch({ inspect: wireSeats, report: (wire) => link.reportSeats(wire), intervalMs: config.statusRefreshMs, logger });
  // Worker reports (message_clankie) wait in the outbox until the controller holds them.
  const forwarder = startReportForwarder(new Outbox(join(config.stateDir, "outbox")), link, logger);
  // Seats in panes: every registered adapter's discover() is asked about every pane.
  const discovery: SeatDiscovery | undefined = paneHost ? await startSeatDiscovery({ host: paneHost, adapters, seats, logger }) : undefined;

  return {
    endpoint,
    machine: config.machine,
    link,
    async close() {
      offSeats();
      watch.stop();
      forwarder.stop();
      discovery?.close();
      paneHost?.close?.();
      codex.close();
      await native.close();
      link.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Established h2 sessions (the controller's warm connection) would hold close() open.
        // Dropping the socket, rather than a GOAWAY, is what a crashed agent looks like too.
        for (const s of sockets) s.destroy();
      });
    },
  };
}
