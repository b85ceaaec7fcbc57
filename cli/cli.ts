/**
 * The `clankie` command (commander): the program's shape. Global options (--json, --state-dir,
 * --log-level, --controller) are accepted before or after the command; each command is a
 * registration of a few lines that compile flags and call the command's own file, grouped by
 * concern (server-commands.ts, worker-commands.ts, owner-, receipts-, lead-, fleet- and
 * claude-commands.ts; the lead's bridge, doctor and completion here). The actions' context and
 * runner are command-context.ts's.
 */
import { Argument, Command, CommanderError, Option } from "commander";
import { createLogger } from "../shared/logger.js";
import { budgetMemoryFor } from "../shared/heap-budget.js";
import { createRun, ending } from "./command-context.js";
import { DOCTOR_EXIT_HELP, EXIT_CODES_HELP, ExitCode } from "./exit-codes.js";
import { packageVersion } from "./version.js";
import { registerServerCommands } from "./server-commands.js";
import { registerWorkerCommands } from "./worker-commands.js";
import { registerFleetCommands, type FleetAction } from "./fleet-commands.js";
import { registerLeadCommands } from "./lead-commands.js";
import { registerOwnerCommands } from "./owner-commands.js";
import { registerReceiptsCommands } from "./receipts-commands.js";
import { registerClaudeCommands } from "./claude-commands.js";

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

  const run = createRun(env);
  registerServerCommands(program, run, env);
  registerWorkerCommands(program, run);

  const action: FleetAction = (body) => run("info", body);
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
      run("warn", async (ctx, o: { url?: string[]; tokenFile?: string; conversation?: string }) => {
        const { runMcpBridge } = await import("./mcp.js");
        await runMcpBridge(
          { stateDir: ctx.stateDir, url: o.url, tokenFile: o.tokenFile, conversation: o.conversation },
          createLogger({ level: ctx.level, fields: { proc: "mcp" } }),
        );
        ending.keepServing = true;
      }),
    );

  program
    .command("doctor")
    .description("check the controller, its database, its agents and its port; non-zero exit when something is wrong")
    .addHelpText("after", `\n${DOCTOR_EXIT_HELP}`)
    .action(
      run("info", async (ctx) => {
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
      run("info", async (_ctx, shell: string) => {
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
  return ending.exitCode;
}

main(process.argv.slice(2), process.env).then(
  (code) => {
    if (!ending.keepServing) process.exit(code);
  },
  (e: unknown) => {
    process.stderr.write(`clankie: internal: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
