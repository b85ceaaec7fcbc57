#!/usr/bin/env node
/** The `clankie` command: parses arguments, compiles configuration from flags and environment, runs one command. */
import { parseArgs } from "node:util";
import { join, resolve } from "node:path";
import { createLogger, type LogLevel } from "../../shared/logger.js";
import { FleetError, InvalidArgumentError } from "../../shared/errors.js";
import { defaultStateDir } from "../state-dir.js";
import { DEFAULT_PORT } from "../config.js";
import { fail, type OutputOptions } from "./output.js";

const USAGE = `clankie — fleet controller and node agent

  clankie up [--state-dir DIR] [--port N] [--json]      controller + local agent + embedded database
             [--deliver-timeout-ms N]                    how long to wait for an agent before a delivery is uncertain (20000)
  clankie controller [--state-dir DIR] [--port N] [--host H]
  clankie agent --controller URL [--fleet-token-file F] [--state-dir DIR] [--machine NAME] [--port N]
               [--pane-host tmux|herdr|none] [--herdr-socket PATH] [--tmux-socket PATH]   discover harness seats in panes (none)
  clankie seat add mailbox NAME [--machine M] [--title T]
  clankie seat list
  clankie mailbox read NAME [--peek] [--agent-state-dir DIR]
  clankie mailbox mcp NAME [--agent-state-dir DIR]       worker-side MCP server (stdio) with read_mailbox
  clankie worker claude-channel --channel-dir DIR        Claude channel MCP server (stdio), fed by the node agent
  clankie worker session-start-hook [--report-dir DIR]   Claude SessionStart hook
  clankie seat-delivery list                              unresolved deliveries with conversation, seat and age
  clankie seat-delivery settle ID abandoned-unknown [--conversation C]
  clankie lead token --conversation ID
  clankie doctor

Every command takes --json. DATABASE_URL selects a PostgreSQL instead of the embedded database.
CLANKIE_STATE_DIR sets the default state directory (~/.clankie).`;

const options = {
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  "state-dir": { type: "string" },
  "agent-state-dir": { type: "string" },
  controller: { type: "string" },
  port: { type: "string" },
  host: { type: "string" },
  "database-url": { type: "string" },
  "log-level": { type: "string" },
  machine: { type: "string" },
  title: { type: "string" },
  peek: { type: "boolean" },
  "fleet-token-file": { type: "string" },
  conversation: { type: "string" },
  // Set by \`clankie up\` on its agent child: stop when the parent's stdin pipe closes, so an
  // agent never outlives a killed parent.
  tethered: { type: "boolean" },
  "deliver-timeout-ms": { type: "string" },
  "pane-host": { type: "string" },
  "herdr-socket": { type: "string" },
  "tmux-socket": { type: "string" },
  "channel-dir": { type: "string" },
  "report-dir": { type: "string" },
} as const;

function portFrom(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError(`--port must be 0-65535, got ${value}`);
  return n;
}

function msFrom(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`--deliver-timeout-ms must be a positive integer, got ${value}`);
  return n;
}

/** Set by a worker command that keeps serving on stdio after main returns. */
let keepServing = false;

async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e) {
    process.stderr.write(`clankie: ${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  const { values: v, positionals: [command, ...rest] } = parsed;
  const out: OutputOptions = { json: v.json ?? false };
  if (v.help || !command) {
    process.stdout.write(USAGE + "\n");
    return command || v.help ? 0 : 2;
  }
  const stateDir = resolve(v["state-dir"] ?? defaultStateDir(env));
  const agentStateDir = resolve(v["agent-state-dir"] ?? (command === "agent" ? stateDir : join(stateDir, "agent")));
  const level = (v["log-level"] ?? (command === "up" ? "warn" : "info")) as LogLevel;
  if (!["debug", "info", "warn", "error"].includes(level)) return fail(out, new InvalidArgumentError(`--log-level must be debug, info, warn or error`));
  const logger = createLogger({ level, fields: { proc: command } });
  const databaseUrl = v["database-url"] ?? env.DATABASE_URL;
  // Fault injection for the crash-window suites only; never set in production.
  const fault = env.CLANKIE_FAULT === "hang_after_admit" || env.CLANKIE_FAULT === "hang_after_agent_reply" ? env.CLANKIE_FAULT : undefined;

  try {
    switch (command) {
      case "up": {
        const { up } = await import("./up.js");
        const { untilSignal } = await import("./until-signal.js");
        const { defaultMachineName } = await import("../../node-agent/config.js");
        const close = await up(
          { stateDir, host: v.host ?? "127.0.0.1", port: portFrom(v.port, DEFAULT_PORT), databaseUrl, deliverTimeoutMs: msFrom(v["deliver-timeout-ms"]), fault, machine: v.machine ?? defaultMachineName() },
          out,
          logger,
          level,
        );
        await untilSignal(close);
        return 0;
      }
      case "controller": {
        const { startFromFlags } = await import("./run-controller.js");
        const { untilSignal } = await import("./until-signal.js");
        const c = await startFromFlags({ stateDir, host: v.host ?? "127.0.0.1", port: portFrom(v.port, DEFAULT_PORT), databaseUrl, deliverTimeoutMs: msFrom(v["deliver-timeout-ms"]), fault }, logger);
        if (out.json) process.stdout.write(JSON.stringify({ url: c.url, mcpUrl: c.mcpUrl, statusUrl: c.statusUrl, database: c.database.driver }) + "\n");
        else process.stdout.write(`controller listening at ${c.url} (MCP ${c.mcpUrl}, database ${c.database.driver})\n`);
        await untilSignal(() => c.close());
        return 0;
      }
      case "agent": {
        if (!v.controller) throw new InvalidArgumentError("clankie agent needs --controller URL");
        const { runAgent } = await import("./run-agent.js");
        const { untilSignal } = await import("./until-signal.js");
        const a = await runAgent({ stateDir: agentStateDir, controllerUrl: v.controller, fleetTokenFile: v["fleet-token-file"], machine: v.machine, host: v.host ?? "127.0.0.1", port: portFrom(v.port, 0), paneHost: v["pane-host"], herdrSocket: v["herdr-socket"], tmuxSocket: v["tmux-socket"] }, logger, env);
        if (out.json) process.stdout.write(JSON.stringify({ endpoint: a.endpoint }) + "\n");
        if (v.tethered) {
          process.stdin.resume();
          process.stdin.once("close", () => void a.close().finally(() => process.exit(0)));
        }
        await untilSignal(() => a.close());
        return 0;
      }
      case "seat": {
        const { seatAdd, seatList } = await import("./seat.js");
        if (rest[0] === "add") await seatAdd(stateDir, v.controller, rest[1], rest[2], { machine: v.machine, title: v.title }, out);
        else if (rest[0] === "list") await seatList(stateDir, v.controller, out);
        else throw new InvalidArgumentError("usage: clankie seat add mailbox NAME | clankie seat list");
        return 0;
      }
      case "mailbox": {
        const { mailboxRead, mailboxMcp } = await import("./mailbox.js");
        if (rest[0] === "read") mailboxRead(agentStateDir, rest[1], v.peek ?? false, out);
        else if (rest[0] === "mcp") await mailboxMcp(agentStateDir, rest[1]);
        else throw new InvalidArgumentError("usage: clankie mailbox read NAME | clankie mailbox mcp NAME");
        return 0;
      }
      case "seat-delivery": {
        const { seatDeliveryList, seatDeliverySettle } = await import("./seat-delivery.js");
        if (rest[0] === "list") await seatDeliveryList(stateDir, v.controller, out);
        else if (rest[0] === "settle") await seatDeliverySettle(stateDir, v.controller, rest[1], rest[2], v.conversation, out);
        else throw new InvalidArgumentError("usage: clankie seat-delivery list | clankie seat-delivery settle ID abandoned-unknown [--conversation C]");
        return 0;
      }
      case "worker": {
        const { runWorkerCommand } = await import("../../node-agent/worker/claude-cli.js");
        keepServing = await runWorkerCommand(rest[0], { channelDir: v["channel-dir"], reportDir: v["report-dir"] });
        return 0;
      }
      case "lead": {
        if (rest[0] !== "token") throw new InvalidArgumentError("usage: clankie lead token --conversation ID");
        const { leadToken } = await import("./lead.js");
        await leadToken(stateDir, v.controller, v.conversation, out);
        return 0;
      }
      case "doctor": {
        const { doctor } = await import("./doctor.js");
        return await doctor(stateDir, v.controller, out);
      }
      default:
        throw new InvalidArgumentError(`unknown command ${command}\n\n${USAGE}`);
    }
  } catch (e) {
    return fail(out, FleetError.from(e));
  }
}

main(process.argv.slice(2), process.env).then(
  (code) => {
    // mailbox mcp keeps serving on stdio until its client goes away.
    if (!(process.argv[2] === "mailbox" && process.argv[3] === "mcp" && code === 0) && !keepServing) process.exit(code);
  },
  (e: unknown) => {
    process.stderr.write(`clankie: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
