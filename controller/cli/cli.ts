/**
 * The `clankie` command (commander): one registration per command, each a few lines that
 * compile flags and call the command's own file. Global options (--json, --state-dir,
 * --log-level, --controller) are accepted before or after the command.
 */
import { addFrontDoorOptions, frontDoorFlagsOf, type FrontDoorFlags } from "./front-door-flags.js";
import { join, resolve } from "node:path";
import { Argument, Command, CommanderError, InvalidArgumentError as OptionError, Option } from "commander";
import { createLogger, type LogLevel, type Logger } from "../../shared/logger.js";
import { InvalidArgumentError } from "../../shared/errors.js";
import { defaultStateDir } from "../state-dir.js";
import { DEFAULT_PORT } from "../config.js";
import { FAULT_POINTS, type FaultPoint } from "../delivery/faults.js";
import { fail, type OutputOptions } from "./output.js";
import { DOCTOR_EXIT_HELP, EXIT_CODES_HELP, ExitCode } from "./exit-codes.js";
import { packageVersion } from "./version.js";
import { registerFleetCommands, type FleetAction } from "./fleet-commands.js";
import { registerLeadCommands } from "./lead-commands.js";
import { registerOwnerCommands } from "./owner-commands.js";
import { registerReceiptsCommands } from "./receipts-commands.js";
import { registerClaudeCommands } from "./claude-commands.js";
import { budgetMemoryFor } from "../../shared/young-generation.js";

interface Globals {
  json?: boolean;
  output?: "json" | "table";
  stateDir?: string;
  logLevel?: LogLevel;
  controller?: string;
}

interface Ctx {
  out: OutputOptions;
  stateDir: string;
  /** The node agent's own state dir (`<state dir>/agent` unless --agent-state-dir). */
  agentStateDir: (flag: string | undefined) => string;
  logger: Logger;
  level: LogLevel;
  controller: string | undefined;
  env: NodeJS.ProcessEnv;
}

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

/** Set by a command that keeps serving on stdio after its action returns. */
let keepServing = false;
let exitCode: number = ExitCode.Ok;

function context(cmd: Command, env: NodeJS.ProcessEnv, defaultLevel: LogLevel): Ctx {
  const g = cmd.optsWithGlobals<Globals>();
  const stateDir = resolve(g.stateDir ?? defaultStateDir(env));
  const level = g.logLevel ?? defaultLevel;
  return {
    // -o json and --json are one switch (kubectl's -o, the project's older --json).
    out: { json: (g.json ?? false) || g.output === "json" },
    stateDir,
    agentStateDir: (flag) => resolve(flag ?? join(stateDir, "agent")),
    logger: createLogger({ level, fields: { proc: cmd.name() } }),
    level,
    controller: g.controller,
    env,
  };
}

/** Fault injection for the crash-window suites only; never set in production. */
function faultFrom(env: NodeJS.ProcessEnv): FaultPoint | undefined {
  return FAULT_POINTS.find((p) => p === env.CLANKIE_FAULT);
}

/** Runs an action, turning any throw into one typed line and its exit code. */
function run<A extends unknown[]>(
  env: NodeJS.ProcessEnv,
  defaultLevel: LogLevel,
  body: (ctx: Ctx, ...args: A) => Promise<number | void>,
) {
  return async (...args: [...A, Record<string, unknown>, Command]) => {
    const cmd = args[args.length - 1] as Command;
    const ctx = context(cmd, env, defaultLevel);
    try {
      exitCode = (await body(ctx, ...(args.slice(0, -1) as unknown as A))) ?? ExitCode.Ok;
    } catch (e) {
      exitCode = fail(ctx.out, e);
    }
  };
}

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

const USAGE_HINT = "(run with --help for usage)";

/** Commander's message without its "error: " prefix, its lines joined (a suggestion comes on a line of its own). */
const oneLine = (str: string) =>
  str
    .replace(/^error: /, "")
    .trim()
    .split(/\s*\n\s*/)
    .join(" ");

/** A usage error as one JSON document on stdout, as every other --json failure is (output.ts `fail`). */
function usageJson(str: string): void {
  const message = str.replace(/^error: /, "").trim();
  process.stdout.write(JSON.stringify({ error: { code: "invalid_argument", message } }) + "\n");
}

export function buildProgram(env: NodeJS.ProcessEnv, json = false): Command {
  const program = new Command("clankie")
    .description(
      "Clankie Fleet: deliver lead conversations' messages into worker agents through their native control channels.",
    )
    .version(packageVersion(), "-V, --version", "print the version")
    .helpOption("-h, --help", "show help for a command")
    .addOption(new Option("--json", "print one JSON document instead of text (errors too, on stdout); as -o json"))
    .addOption(
      new Option(
        "-o, --output <format>",
        "json: one JSON document (as --json); table: text and tables (the default)",
      ).choices(["json", "table"]),
    )
    .addOption(
      new Option("--state-dir <dir>", "the controller's state directory (tokens, embedded database, controller.json)")
        .env("CLANKIE_STATE_DIR")
        .default(undefined, "~/.clankie"),
    )
    .addOption(
      new Option("--log-level <level>", "log verbosity on stderr (default: warn for up, info otherwise)").choices([
        "debug",
        "info",
        "warn",
        "error",
      ]),
    )
    // Repeatable, or a comma list: an agent tries each replica (ADR 0038); other commands take one.
    .addOption(
      new Option(
        "--controller <url>",
        "the controller to talk to (default: the one in <state dir>/controller.json); for agent, repeat it or give a comma list",
      ).argParser((v: string, prev?: string) => (prev ? `${prev},${v}` : v)),
    )
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .addHelpText(
      "after",
      `\n${EXIT_CODES_HELP}\n\nEnvironment: DATABASE_URL (PostgreSQL), CLANKIE_STATE_DIR, CLANKIE_JOIN_TOKEN (agent), CLANKIE_FLEET_CA_PASSPHRASE (controller).\nEach command has its own --help, e.g. clankie up --help.`,
    )
    .exitOverride()
    .hook("preAction", (_program, cmd) => budgetMemoryFor(cmd.name(), cmd.opts<{ databaseUrl?: string }>())) // before its modules load
    // One line, as promised (issue 37 item 5): commander's own hint would be a second one.
    .configureOutput({
      outputError: (str, write) => (json ? usageJson(str) : write(`clankie: usage: ${oneLine(str)} ${USAGE_HINT}\n`)),
    });

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
        env,
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
          const { defaultMachineName } = await import("../../node-agent/config.js");
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
        env,
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
        env,
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

  const mailbox = program.command("mailbox").description("worker: the worker's side of a mailbox seat");
  mailbox
    .command("read")
    .description("print the unread messages of a mailbox seat (and mark them read)")
    .argument("<name>", "the mailbox seat")
    .option("--peek", "do not mark them read")
    .option("--agent-state-dir <dir>", "the node agent's state dir (default: <state dir>/agent)")
    .action(
      run(env, "info", async (ctx, name: string, o: { peek?: boolean; agentStateDir?: string }) => {
        const { mailboxRead } = await import("./mailbox.js");
        mailboxRead(ctx.agentStateDir(o.agentStateDir), name, o.peek ?? false, ctx.out);
      }),
    );
  mailbox
    .command("mcp")
    .description("a worker-side MCP server on stdio with read_mailbox (give it to the worker's harness)")
    .argument("<name>", "the mailbox seat")
    .option("--agent-state-dir <dir>", "the node agent's state dir (default: <state dir>/agent)")
    .action(
      run(env, "info", async (ctx, name: string, o: { agentStateDir?: string }) => {
        const { mailboxMcp } = await import("./mailbox.js");
        await mailboxMcp(ctx.agentStateDir(o.agentStateDir), name);
        keepServing = true;
      }),
    );

  program
    .command("worker")
    .description(
      "worker-side helpers: mcp (any hired harness), and claude-channel, session-start-hook, turn-hook, question-hook (Claude seats)",
    )
    .argument("<helper>", "mcp | claude-channel | session-start-hook | turn-hook | question-hook")
    .option("--agent-state-dir <dir>", "mcp, question-hook: the node agent's state dir (default: <state dir>/agent)")
    .option(
      "--wait-seconds <n>",
      "question-hook: how long to wait for the hiring lead's answer before the owner's dialog (default 300)",
    )
    .option("--channel-dir <dir>", "claude-channel: the directory the node agent feeds")
    .option("--report-dir <dir>", "the hooks: where they file the session and turn state")
    .addHelpText(
      "after",
      "\nmcp: a worker-side MCP server on stdio with message_clankie and message_clankie_status (and, when the owner turned peers on, list_fleet_seats and message_peer); the node agent proves from the kernel that the caller runs in a seat's pane.",
    )
    .action(
      run(
        env,
        "info",
        async (
          ctx,
          helper: string,
          o: { agentStateDir?: string; channelDir?: string; reportDir?: string; waitSeconds?: string },
        ) => {
          if (helper === "mcp") {
            const { serveWorkerMcp } = await import("../../node-agent/worker/fleet-mcp.js");
            await serveWorkerMcp({ agentStateDir: ctx.agentStateDir(o.agentStateDir) });
            keepServing = true;
            return;
          }
          const { runWorkerCommand } = await import("../../node-agent/worker/claude-cli.js");
          keepServing = await runWorkerCommand(helper, {
            ...o,
            agentStateDir: helper === "question-hook" ? ctx.agentStateDir(o.agentStateDir) : undefined,
          }).catch((e: Error) => {
            // Its own usage errors are the user's to fix, not internal faults.
            throw /^(usage|clankie worker)/.test(e.message) ? new InvalidArgumentError(e.message) : e;
          });
        },
      ),
    );

  const action: FleetAction = (body) => run(env, "info", body);
  const registrations = [registerOwnerCommands, registerReceiptsCommands, registerLeadCommands, registerFleetCommands];
  for (const register of [...registrations, registerClaudeCommands]) register(program, action);

  program
    .command("mcp")
    .description(
      "the lead's stdio MCP bridge to the controller: no token on a command line (default: this state dir's controller and lead token)",
    )
    .option(
      "--url <url>",
      "the controller's MCP URL (default: from <state dir>/controller.json); repeat it or separate with commas " +
        "for several replicas of one fleet: the bridge moves to the next when one fails",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option("--token-file <file>", "a file holding the lead's bearer token (default: the state dir's lead token)")
    .option(
      "--conversation <id>",
      "the lead conversation (default: global-default); without --token-file its token is the one clankie lead token " +
        "stored (<state dir>/leads/<id>.token; global-default's lead.token), issued only when the conversation has none",
    )
    .addHelpText("after", "\n--state-dir (global) selects the controller's state dir the defaults come from.")
    .action(
      run(env, "warn", async (ctx, o: { url?: string[]; tokenFile?: string; conversation?: string }) => {
        const { runMcpBridge } = await import("./mcp.js");
        await runMcpBridge(
          { stateDir: ctx.stateDir, url: o.url, tokenFile: o.tokenFile, conversation: o.conversation },
          createLogger({ level: ctx.level, fields: { proc: "mcp" } }),
        );
        keepServing = true;
      }),
    );

  program
    .command("doctor")
    .description("check the controller, its database, its agents and its port; non-zero exit when something is wrong")
    .addHelpText("after", `\n${DOCTOR_EXIT_HELP}`)
    .action(
      run(env, "info", async (ctx) => {
        const { doctor } = await import("./doctor.js");
        return doctor(ctx.stateDir, ctx.controller, ctx.out);
      }),
    );

  program
    .command("completion")
    .description("print a completion script for bash or zsh, generated from this CLI's commands")
    .addArgument(new Argument("<shell>", "bash | zsh").choices(["bash", "zsh"]))
    .addHelpText(
      "after",
      "\nbash: source <(clankie completion bash), or save it as ~/.local/share/bash-completion/completions/clankie" +
        "\nzsh:  source <(clankie completion zsh) in ~/.zshrc",
    )
    .action(
      run(env, "info", async (_ctx, shell: string) => {
        const { completionScript } = await import("./completion.js");
        process.stdout.write(completionScript(program, shell));
      }),
    );

  return program;
}

/** --json, -o json, -ojson, --output json or --output=json anywhere before `--`. */
function asksForJson(argv: string[]): boolean {
  const spelled = new Set(["--json", "-ojson", "--output=json"]);
  return argv.some((a, i) => spelled.has(a) || ((a === "-o" || a === "--output") && argv[i + 1] === "json"));
}

async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  // Known before parsing, so that a usage error itself answers in JSON when --json was asked for.
  const dashdash = argv.indexOf("--");
  const program = buildProgram(env, asksForJson(dashdash < 0 ? argv : argv.slice(0, dashdash)));
  if (argv.length === 0) {
    program.outputHelp({ error: true });
    return ExitCode.Usage;
  }
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help and --version are answers, not errors; a bare group (`clankie seat`) shows its help.
      if (e.code === "commander.helpDisplayed" || e.code === "commander.version") return ExitCode.Ok;
      if (e.code === "commander.help") return ExitCode.Usage;
      return ExitCode.Usage;
    }
    throw e;
  }
  return exitCode;
}

main(process.argv.slice(2), process.env).then(
  (code) => {
    if (!keepServing) process.exit(code);
  },
  (e: unknown) => {
    process.stderr.write(`clankie: internal: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
