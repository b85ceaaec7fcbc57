/** `clankie agent`: a node agent, until SIGINT/SIGTERM. Loads no database code. */
import { FleetError, ErrorCode } from "../shared/errors.js";
import type { Logger } from "../shared/logger.js";
import { compileAgentConfig, loadAgent, loadJoin, parseControllerUrls } from "../node-agent/for-cli.js";

export interface AgentFlags {
  stateDir: string;
  /** The controllers' agent URLs (https), a comma list; remembered from the join when omitted. */
  controllerUrl: string | undefined;
  /** A join token, or "-" to read it from standard input (never put it in a command line you share). */
  join: string | undefined;
  machine: string | undefined;
  /** tmux | herdr | none: where the agent discovers harness seats. */
  paneHost?: string | undefined;
  herdrSocket?: string | undefined;
  tmuxSocket?: string | undefined;
}

async function readStdinLine(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) {
    chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    if (text.includes("\n") || text.length > 4096) break;
  }
  const token = Buffer.concat(chunks).toString("utf8").split("\n")[0]!.trim();
  if (!token)
    throw new FleetError(
      ErrorCode.InvalidArgument,
      "--join - reads the join token from standard input, which was empty",
    );
  return token;
}

export async function resolveJoinToken(join: string | undefined, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (join === "-") return readStdinLine();
  return join ?? (env.CLANKIE_JOIN_TOKEN || undefined);
}

/** Joins only: makes the key pair, gets the certificate, stores the identity, and returns. */
export async function joinOnly(
  f: AgentFlags,
  env: NodeJS.ProcessEnv,
): Promise<{ machine: string; fleetId: string; notAfter: string; controllerUrl: string }> {
  const token = await resolveJoinToken(f.join, env);
  if (!token || !f.controllerUrl)
    throw new FleetError(
      ErrorCode.InvalidArgument,
      "clankie agent --join-only needs --controller URL and --join TOKEN (or --join - with the token on stdin)",
    );
  const { joinFleet, AGENT_VERSION } = await loadJoin();
  const id = await joinFleet({
    stateDir: f.stateDir,
    controllerUrl: parseControllerUrls(f.controllerUrl),
    token,
    agentVersion: AGENT_VERSION,
  });
  if (f.machine && f.machine !== id.machine)
    throw new FleetError(ErrorCode.InvalidArgument, `the join token was for ${id.machine}, not ${f.machine}`);
  return {
    machine: id.machine,
    fleetId: id.fleetId,
    notAfter: id.notAfter.toISOString(),
    controllerUrl: id.controllerUrl,
  };
}

export interface StartedAgent {
  close(): Promise<void>;
  endpoint: string;
  machine: string;
  registered: Promise<void>;
  linked: Promise<void>;
  /** Settles once a revoked agent has logged it and stopped its links. */
  revoked: Promise<void>;
}

export async function runAgent(f: AgentFlags, logger: Logger, env: NodeJS.ProcessEnv): Promise<StartedAgent> {
  const joinToken = await resolveJoinToken(f.join, env);
  const { startAgent } = await loadAgent();
  const config = compileAgentConfig({
    stateDir: f.stateDir,
    controllerUrl: f.controllerUrl,
    joinToken,
    machine: f.machine,
    paneHost: f.paneHost,
    herdrSocket: f.herdrSocket,
    tmuxSocket: f.tmuxSocket,
    env,
  });
  const agent = await startAgent(config, logger);
  // Revoked: it idles rather than exits. Every service manager it runs under (systemd
  // Restart=on-failure, launchd KeepAlive, supervise.sh, the Windows task) would restart an
  // exited agent straight into the same refusal, a loop of dials and log lines; idling ends it.
  let idle: NodeJS.Timeout | undefined;
  let closing: Promise<void> | undefined;
  const closeOnce = () => (closing ??= agent.close());
  const stopped = agent.revoked.then(async (reason) => {
    idle = setInterval(() => {}, 2 ** 30);
    const rejoin = "to rejoin, run clankie fleet enroll NAME on the controller and clankie agent --join - here";
    const what = "this machine was revoked by the fleet owner: the agent stopped dialing the controller and idles";
    logger.error(`${what}; ${rejoin}`, { machine: agent.machine, reason });
    await closeOnce();
  });
  return {
    close: async () => {
      clearInterval(idle);
      await closeOnce();
    },
    endpoint: agent.endpoint,
    machine: agent.machine,
    registered: agent.link.registered,
    linked: agent.linked,
    revoked: stopped,
  };
}
