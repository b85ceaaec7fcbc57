/**
 * The node agent's composition root: its fleet identity, seat book, adapters, the
 * AgentService served on the reverse links it dials (no inbound port), and the link to
 * the controller.
 */
import { HostJournal } from "./hire/host-journal.js";
import { createServer, type Http2Server } from "node:http2";
import { LinkRoundTrips } from "./service/link-round-trips.js";
import { createAgentRpcHandler } from "./service/rpc-handler.js";
import { SeatLocks } from "./seats/seat-locks.js";
import { EpochFences } from "./seats/epoch-fences.js";
import { startSeatStatusWatch } from "./seats/seat-status-watch.js";
import type { Socket } from "node:net";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { newToken, tokenMatcher } from "../shared/tokens.js";
import type { Logger } from "../shared/logger.js";
import type { AgentConfig } from "./config.js";
import { SeatBook } from "./seats/seat-book.js";
import { QuestionDesk } from "./questions/question-desk.js";
import { MailboxStore } from "./mailbox/store.js";
import { createNativeAdapters } from "./harnesses/native-adapters.js";
import { createPaneHost } from "./panes/select-host.js";
import { startSeatDiscovery, type SeatDiscovery } from "./seats/discovery.js";
import { systemMonotonicClock, type MonotonicClock } from "./proofs/proof.js";
import { selectProofProvider } from "./proofs/select.js";
import { createAgentService } from "./service/agent-service.js";
import { startControllerLink, type ControllerLink } from "./service/controller-link.js";
import { startReportForwarder } from "./service/report-forwarder.js";
import { startReverseDialer } from "./service/reverse-dialer.js";
import { GatewayTunnels } from "./service/gateway-tunnel.js";
import { loadIdentity, type AgentIdentity } from "./identity/identity-files.js";
import { joinFleet } from "./identity/join.js";
import { IdentityKeeper } from "./identity/identity-keeper.js";
import { FleetError, ErrorCode, InvalidArgumentError } from "../shared/errors.js";
import { Outbox } from "./mailbox/outbox.js";
import { toWireSeat } from "./service/wire-seat.js";
import { startWorkerEndpoint } from "./worker-link/worker-endpoint.js";
import { createHirer } from "./hire/create-hirer.js";
import type { Hirer } from "./hire/hire.js";

export { AGENT_VERSION } from "./version.js";
import { AGENT_VERSION } from "./version.js";

export interface RunningAgent {
  /** Where this agent is linked: the controller's agent URL (it listens on no port). */
  readonly endpoint: string;
  readonly machine: string;
  readonly identity: IdentityKeeper;
  /** The replicas this agent has a live reverse link to. */
  linkedUrls(): string[];
  /** Resolves once the first reverse link is up (after registering): the controller can call it. */
  readonly linked: Promise<void>;
  /**
   * Resolves, with the controller's reason, when the fleet owner revoked or removed this machine:
   * the link and the reverse links have stopped dialing by then (issue 37 item 1).
   */
  readonly revoked: Promise<string>;
  readonly link: ControllerLink;
  /** Whether the question desk watches this seat's thread now (diagnostics and tests). */
  watchingQuestions(seatName: string): boolean;
  close(): Promise<void>;
}

/** The stored identity, or a new one from the join token; refuses a machine name it does not hold. */
async function identityFor(config: AgentConfig, logger: Logger): Promise<AgentIdentity> {
  mkdirSync(config.stateDir, { recursive: true, mode: 0o700 });
  let id: AgentIdentity | undefined;
  if (config.joinToken) {
    if (!config.controllerUrls.length)
      throw new InvalidArgumentError("joining needs --controller URL (the agentUrl of the controller)");
    id = await joinFleet({
      stateDir: config.stateDir,
      controllerUrl: config.controllerUrls,
      token: config.joinToken,
      agentVersion: AGENT_VERSION,
    });
    logger.info("joined the fleet", { machine: id.machine, fleetId: id.fleetId, notAfter: id.notAfter.toISOString() });
  } else {
    id = loadIdentity(config.stateDir);
    if (!id)
      throw new FleetError(
        ErrorCode.Unauthenticated,
        `this agent has not joined a fleet (no identity in ${config.stateDir}): run clankie fleet enroll NAME on the controller, then clankie agent --controller URL --join TOKEN`,
      );
    // URLs given now come first; the stored ones (the replicas it learned) stay behind them.
    if (config.controllerUrls.length)
      id = {
        ...id,
        controllerUrl: config.controllerUrls[0]!,
        controllerUrls: [...new Set([...config.controllerUrls, ...id.controllerUrls])],
      };
  }
  if (config.machine && config.machine !== id.machine)
    throw new InvalidArgumentError(`this agent's certificate is for ${id.machine}, not ${config.machine}`);
  return id;
}

export async function startAgent(
  config: AgentConfig,
  logger: Logger,
  clock: MonotonicClock = systemMonotonicClock,
): Promise<RunningAgent> {
  const identity = new IdentityKeeper(await identityFor(config, logger), config.stateDir, logger);
  const machine = identity.identity.machine;
  const controllerUrl = identity.identity.controllerUrl;
  // The URLs an operator gave (or the one it joined through): always kept in the stored list.
  const given = config.controllerUrls.length ? config.controllerUrls : [controllerUrl];
  // The live replicas the fleet named in its last answer (ADR 0038).
  let replicas: string[] = [];
  mkdirSync(config.mailboxDir, { recursive: true, mode: 0o700 });
  const seats = new SeatBook(config.stateDir);
  const mailboxes = new MailboxStore(config.mailboxDir);
  const paneHost = createPaneHost(config.paneHost);
  // Kernel facts for this OS: a Codex seat over TCP is proven by the pane proof before each write.
  const proofs = selectProofProvider(process.platform, clock);
  // Every registered harness (harnesses/registry.ts), its adapter and hire launcher.
  const native = createNativeAdapters({
    clock,
    stateDir: config.stateDir,
    mailboxes,
    hires: new HostJournal(config.stateDir),
    paneHost,
    tmuxServer: config.paneHost.kind === "tmux" ? { socketPath: config.paneHost.socketPath } : undefined,
    stillOccupied: (seat) => seats.get(seat.name)?.occupantId === seat.occupantId,
    proofs,
  });
  const adapters = native.adapters;
  // A fresh token per process: only the controller this agent registered with can call it.
  const agentToken = newToken("agent");

  const locks = new SeatLocks();
  // The controller's sessions are pinged so the freshness gate bounds transit by the real link.
  const roundTrips = new LinkRoundTrips();
  const agentTokenMatches = tokenMatcher(agentToken);
  const tokenCheck = (_service: string, token: string | undefined) => agentTokenMatches(token);
  let hirer: Hirer | undefined;
  let questions: QuestionDesk | undefined;
  const impl = createAgentService({
    seats,
    adapters,
    clock,
    mailboxes,
    roundTrips,
    locks,
    epochFences: new EpochFences(join(config.stateDir, "epoch-fences.json")),
    hirer: () => hirer,
    get questions() {
      return questions;
    },
  });
  // The token is checked from the headers before a byte of the body is read (service/rpc-handler.ts).
  const handler = createAgentRpcHandler(impl, tokenCheck);
  // The controller's gateway tunnel on a reverse link (ADR 0042) is taken before the token check:
  // it carries this agent's own calls to the replica it dialed, nothing the controller asks of it.
  const tunnels = new GatewayTunnels((session) => dialer.urlOf(session));
  const server: Http2Server = createServer(
    { maxSessionMemory: 16, settings: { maxConcurrentStreams: 128, maxHeaderListSize: 64 * 1024 } },
    (req, res) => tunnels.accept(req, res) || handler(req, res),
  );
  roundTrips.watch(server);
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    // Small frames (a verdict, a PING ack) must not wait on Nagle for the peer's delayed ACK.
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  let resolveLinked!: () => void;
  const linked = new Promise<void>((r) => (resolveLinked = r));
  let resolveRevoked!: (reason: string) => void;
  const revoked = new Promise<string>((r) => (resolveRevoked = r));
  // The agent listens on no port, and its redial and retry timers are unref'd: this keeps the
  // process alive while every link is down (until close()).
  const keepAlive = setInterval(() => {}, 2 ** 30);
  const dialer = startReverseDialer({ server, tls: () => identity.tls(), logger, onLinked: () => resolveLinked() });
  const endpoint = controllerUrl;

  const wireSeats = async () =>
    Promise.all(
      seats.all().map(async (s) => {
        const adapter = adapters.get(s.kind);
        const snapshot = adapter
          ? (await locks.run(s.name, () => adapter.inspect(s))).snapshot
          : {
              status: "unknown" as const,
              occupantId: s.occupantId,
              inputCapabilities: { deliveryModes: [], interrupt: false, nextTurnOnly: false },
            };
        return toWireSeat(s, snapshot);
      }),
    );

  const link = startControllerLink({
    // A replica this agent holds a live reverse link to is up; then the others the fleet named;
    // then every URL it knows, the first it was given among them.
    controllerUrls: () => [...new Set([...dialer.connectedUrls(), ...replicas, ...identity.identity.controllerUrls])],
    tls: () => identity.tls(),
    tunnels,
    machine,
    endpoint,
    agentToken,
    instanceId: randomUUID(),
    platform: process.platform,
    agentVersion: AGENT_VERSION,
    seats: wireSeats,
    logger,
    // Registered first, then linked: the controller knows this process's token before it calls.
    onReplicas: (urls) => {
      replicas = urls;
      dialer.setUrls(urls.length ? urls : [link.currentUrl]);
      identity.rememberControllerUrls([...urls, ...given]);
    },
    onRevoked: (reason) => {
      // Every replica refuses the same certificate: no link is worth redialing.
      dialer.close();
      resolveRevoked(reason);
    },
  });
  identity.on("renewed", () => {
    link.reconnect();
    dialer.redialAll();
  });
  identity.start();
  const report = async (wire: Awaited<ReturnType<typeof wireSeats>>) => {
    await link.reportSeats(wire);
    watch.reported(wire);
  };
  // Workers' questions: a watcher on each Codex seat's thread, filed with the controller.
  questions = new QuestionDesk({
    seats,
    ledgerDir: join(config.stateDir, "questions"),
    link,
    logger: logger.child({ component: "questions" }),
  });
  const syncQuestions = () =>
    void questions!.sync().catch((e: Error) => logger.warn("question watchers failed", { error: e.message }));
  // A thread is resumable only once it has a rollout (its first turn): retry until attached.
  const questionTimer = setInterval(syncQuestions, config.statusRefreshMs);
  questionTimer.unref();
  const offSeats = seats.onChange(() => {
    syncQuestions();
    wireSeats()
      .then(report)
      .catch((e: Error) => logger.warn("seat report failed", { error: e.message }));
  });
  // Status and capabilities change without the seat book changing (a turn ends, control is lost).
  const watch = startSeatStatusWatch({
    inspect: wireSeats,
    report: (wire) => link.reportSeats(wire),
    intervalMs: config.statusRefreshMs,
    logger,
  });
  // Worker reports (message_clankie) wait in the outbox until the controller holds them.
  const forwarder = startReportForwarder(new Outbox(join(config.stateDir, "outbox")), link, logger);
  // Seats in panes: every registered adapter's discover() is asked about every pane.
  const discovery: SeatDiscovery | undefined = paneHost
    ? await startSeatDiscovery({ host: paneHost, adapters, seats, logger })
    : undefined;
  // Without it (a socket path over the OS limit, say) workers in panes get a refused connection: not sent, never guessed.
  const workers = await startWorkerEndpoint({
    dir: join(config.stateDir, "worker"),
    seats,
    paneHost,
    proofs,
    link,
    logger,
    questions,
  }).catch((e: Error) => {
    logger.warn("the worker endpoint did not start; message_clankie from panes is refused", { error: e.message });
    return undefined;
  });
  hirer = createHirer({
    config,
    seats,
    adapters,
    clock,
    proofs,
    locks,
    native,
    scanNow: () => discovery?.scanNow() ?? Promise.resolve(),
    logger: logger.child({ component: "hire" }),
  });

  return {
    endpoint,
    machine,
    identity,
    linkedUrls: () => dialer.connectedUrls(),
    linked,
    revoked,
    link,
    watchingQuestions: (seatName) => questions?.watching(seatName) ?? false,
    async close() {
      clearInterval(keepAlive);
      identity.stop();
      dialer.close();
      offSeats();
      clearInterval(questionTimer);
      questions?.close();
      hirer?.close();
      await workers?.close();
      watch.stop();
      forwarder.stop();
      discovery?.close();
      paneHost?.close?.();
      await native.close();
      // Windows' provider keeps a PowerShell host; it must not outlive the agent.
      proofs.close?.();
      link.stop();
      // Dropping the sockets, rather than a GOAWAY, is what a crashed agent looks like too.
      for (const s of sockets) s.destroy();
    },
  };
}
