/**
 * `clankie up`, `clankie controller` and `clankie agent` as commander registrations: the commands
 * that run the fleet's own processes, with the flags they share. The work is in up.ts,
 * run-controller.ts and run-agent.ts, loaded only by the command that runs it.
 */
import { type Command, InvalidArgumentError as OptionError, Option } from "commander";
import { DEFAULT_PORT } from "../controller/for-cli.js";
import { faultFrom, type Run } from "./command-context.js";
import { addFrontDoorOptions, type FrontDoorFlags, frontDoorFlagsOf } from "./front-door-flags.js";

const int = (name: string, min: number, max: number) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new OptionError(`${name} must be an integer ${min}-${max}, got ${value}`);
  return n;
};
const [port, agentPort, ms] = [
  int("--port", 0, 65535),
  int("--agent-port", 0, 65535),
  int("--deliver-timeout-ms", 1, 3_600_000),
];
const [leaseMs, renewMs] = [int("--instance-lease-ms", 1_000, 600_000), int("--instance-renew-ms", 100, 300_000)];

const paneHostOption = (choices: string[], dflt: string) =>
  new Option("--pane-host <host>", "where the agent discovers harness seats (Codex, Claude, OpenCode, Pi) in panes")
    .choices(choices)
    .default(dflt);
const herdrSocketOption = () =>
  new Option("--herdr-socket <path>", "Herdr's socket (default: $HERDR_SOCKET_PATH or ~/.config/herdr/herdr.sock)");
const tmuxSocketOption = () =>
  new Option("--tmux-socket <path>", "the tmux server's socket, as tmux -S (default: the user's default server)");
const databaseUrlOption = () =>
  new Option("--database-url <url>", "a PostgreSQL URL instead of the embedded PGlite in the state dir").env(
    "DATABASE_URL",
  );
const hostOption = () => new Option("--host <host>", "address to listen on").default("127.0.0.1");
const deliverTimeoutOption = () =>
  new Option("--deliver-timeout-ms <ms>", "how long to wait for an agent before a delivery is uncertain")
    .argParser(ms)
    .default(20_000);

export function registerServerCommands(program: Command, run: Run, env: NodeJS.ProcessEnv): void {
  addFrontDoorOptions(program.command("up"))
    .description(
      "controller + one local node agent + dashboard + embedded database, on loopback; prints how to connect a lead",
    )
    .addOption(
      new Option("--port <n>", "port for gRPC, MCP, the dashboard and /metrics (0: any free one)")
        .argParser(port)
        .default(DEFAULT_PORT),
    )
    .addOption(hostOption())
    .addOption(databaseUrlOption())
    .addOption(deliverTimeoutOption())
    .addOption(new Option("--machine <name>", "the local agent's machine name (default: this host's name)"))
    .addOption(
      new Option(
        "--agent-port <n>",
        "the mutual-TLS port the local agent (and any other) dials (default: --port + 1, so 7421; any free one with --port 0)",
      ).argParser(agentPort),
    )
    .addOption(paneHostOption(["auto", "tmux", "herdr", "none"], "auto").argParser((v) => v))
    .addOption(herdrSocketOption())
    .addOption(tmuxSocketOption())
    .addHelpText(
      "after",
      "\n--pane-host auto: Herdr when its socket exists, else tmux when a server answers, else none (mailbox seats only).\nWith --json, exactly one line {mcpUrl, token, statusUrl, dashboardUrl, agentUrl, bridge} (and caFile off loopback) once the agent has registered and linked.\nThe local agent enrolls like any machine: a join token on its first start, its own key pair, mutual TLS to the agent port.",
    )
    .action(
      run(
        "warn",
        async (
          ctx,
          o: {
            port: number;
            host: string;
            databaseUrl?: string;
            deliverTimeoutMs: number;
            agentPort?: number;
            machine?: string;
            paneHost: string;
            herdrSocket?: string;
            tmuxSocket?: string;
          } & FrontDoorFlags,
        ) => {
          // A second `up` on another --port must not clash on the agent port: it moves with --port.
          const agentPort = o.agentPort ?? (o.port === 0 ? 0 : o.port < 65535 ? o.port + 1 : o.port - 1);
          // Checked before the controller's modules load and before anything is created (port-check.ts).
          const { assertPortsFree, controllerPorts } = await import("./port-check.js");
          await assertPortsFree(controllerPorts({ host: o.host, port: o.port, agentPort }));
          const { up } = await import("./up.js");
          const { untilSignal } = await import("./until-signal.js");
          const { defaultMachineName } = await import("../node-agent/for-cli.js");
          const close = await up(
            {
              stateDir: ctx.stateDir,
              host: o.host,
              port: o.port,
              databaseUrl: o.databaseUrl,
              deliverTimeoutMs: o.deliverTimeoutMs,
              fault: faultFrom(env),
              agentPort,
              machine: o.machine ?? defaultMachineName(),
              paneHost: o.paneHost,
              herdrSocket: o.herdrSocket,
              tmuxSocket: o.tmuxSocket,
              ...frontDoorFlagsOf(o),
            },
            ctx.out,
            ctx.logger,
            ctx.level,
            env,
          );
          await untilSignal(close);
        },
      ),
    );

  addFrontDoorOptions(program.command("controller"))
    .description("the controller alone, until SIGINT/SIGTERM")
    .addOption(
      new Option("--port <n>", "port for gRPC, MCP, the dashboard and /metrics").argParser(port).default(DEFAULT_PORT),
    )
    .addOption(hostOption())
    .addOption(databaseUrlOption())
    .addOption(deliverTimeoutOption())
    .addOption(new Option("--agent-host <host>", "address the mutual-TLS agent port listens on (default: --host)"))
    .addOption(new Option("--agent-port <n>", "the agent port agents dial (0: any free one)").argParser(port))
    .addOption(
      new Option(
        "--agent-advertise <host>",
        "the host name agents reach the agent port by (goes into join tokens and the server certificate)",
      ),
    )
    .addOption(
      new Option(
        "--tls-name <host>",
        "one more name the server certificates carry, e.g. a load balancer's in front of several replicas (repeatable)",
      ).argParser((v: string, prev: string[] = []) => [...prev, v]),
    )
    .addOption(
      new Option(
        "--instance-lease-ms <ms>",
        "this replica's lease in the journal: peers take over its in-flight calls once it goes unrenewed this long (ADR 0036)",
      ).argParser(leaseMs),
    )
    .addOption(
      new Option(
        "--instance-renew-ms <ms>",
        "how often the lease is renewed (default: 2000, at most a third of the lease)",
      ).argParser(renewMs),
    )
    .addHelpText(
      "after",
      "\nAgents dial https://HOST:agent-port with mutual TLS. CLANKIE_FLEET_CA_PASSPHRASE seals the fleet CA's key.",
    )
    .action(
      run(
        "info",
        async (
          ctx,
          o: {
            port: number;
            host: string;
            databaseUrl?: string;
            deliverTimeoutMs: number;
            agentHost?: string;
            agentPort?: number;
            agentAdvertise?: string;
            tlsName?: string[];
            instanceLeaseMs?: number;
            instanceRenewMs?: number;
          } & FrontDoorFlags,
        ) => {
          const { assertPortsFree, controllerPorts } = await import("./port-check.js");
          await assertPortsFree(
            controllerPorts({ host: o.host, port: o.port, agentHost: o.agentHost, agentPort: o.agentPort }),
          );
          const { startFromFlags } = await import("./run-controller.js");
          const { untilSignal } = await import("./until-signal.js");
          const c = await startFromFlags(
            {
              stateDir: ctx.stateDir,
              host: o.host,
              port: o.port,
              databaseUrl: o.databaseUrl,
              deliverTimeoutMs: o.deliverTimeoutMs,
              fault: faultFrom(env),
              agentHost: o.agentHost,
              agentPort: o.agentPort,
              agentAdvertise: o.agentAdvertise,
              tlsName: o.tlsName,
              caPassphrase: env.CLANKIE_FLEET_CA_PASSPHRASE,
              instanceLeaseMs: o.instanceLeaseMs,
              instanceRenewMs: o.instanceRenewMs,
              ...frontDoorFlagsOf(o),
            },
            ctx.logger,
          );
          if (ctx.out.json)
            process.stdout.write(
              JSON.stringify({
                url: c.url,
                mcpUrl: c.mcpUrl,
                statusUrl: c.statusUrl,
                metricsUrl: c.metricsUrl,
                agentUrl: c.agentUrl,
                caFile: c.caFile,
                database: c.database.driver,
              }) + "\n",
            );
          else
            process.stdout.write(
              `controller listening at ${c.url} (MCP ${c.mcpUrl}, metrics ${c.metricsUrl}, agents ${c.agentUrl}, database ${c.database.driver})\n`,
            );
          await untilSignal(() => c.close());
        },
      ),
    );

  program
    .command("agent")
    .description(
      "a node agent for this machine: joins the fleet once with a join token, later starts use the stored identity; runs until SIGINT/SIGTERM",
    )
    .addOption(
      new Option(
        "--join <token>",
        "a join token from `clankie fleet enroll` (- reads it from stdin; default: $CLANKIE_JOIN_TOKEN); only needed the first time",
      ),
    )
    .addOption(new Option("--join-only", "join, store the identity, exit"))
    .addOption(new Option("--machine <name>", "this machine's name in the fleet (checked against the join token's)"))
    .addOption(paneHostOption(["tmux", "herdr", "none"], "none"))
    .addOption(herdrSocketOption())
    .addOption(tmuxSocketOption())
    // Set by `clankie up` on its agent child: stop when the parent's stdin pipe closes.
    .addOption(new Option("--tethered").hideHelp())
    .addHelpText(
      "after",
      "\n--controller URL is a controller's agent URL (https://HOST:agent-port, mutual TLS); needed with --join, remembered after it.\nGive several (repeat --controller, or a comma list) and the agent uses any that answers; it also learns and remembers every live replica.\nThe agent dials every replica (reverse HTTP/2 links); it listens on no port. The state dir is the agent's own (default <state dir> for this command).",
    )
    .action(
      run(
        "info",
        async (
          ctx,
          o: {
            join?: string;
            joinOnly?: boolean;
            machine?: string;
            paneHost: string;
            herdrSocket?: string;
            tmuxSocket?: string;
            tethered?: boolean;
          },
        ) => {
          const { runAgent, joinOnly } = await import("./run-agent.js");
          const flags = {
            stateDir: ctx.stateDir,
            controllerUrl: ctx.controller,
            join: o.join,
            machine: o.machine,
            paneHost: o.paneHost,
            herdrSocket: o.herdrSocket,
            tmuxSocket: o.tmuxSocket,
          };
          if (o.joinOnly) {
            const { emit } = await import("./output.js");
            const id = await joinOnly(flags, env);
            emit(ctx.out, id, () => `joined ${id.fleetId} as ${id.machine} (certificate valid until ${id.notAfter})`);
            return;
          }
          const { untilSignal } = await import("./until-signal.js");
          const a = await runAgent(flags, ctx.logger, env);
          // Ready means the controller can call this agent: registered, and a reverse link is up.
          if (ctx.out.json) await a.linked;
          if (ctx.out.json) process.stdout.write(JSON.stringify({ endpoint: a.endpoint, machine: a.machine }) + "\n");
          if (o.tethered) {
            process.stdin.resume();
            process.stdin.once("close", () => void a.close().finally(() => process.exit(0)));
          }
          await untilSignal(() => a.close());
        },
      ),
    );
}
