/**
 * `clankie fleet enroll|list|revoke|remove|deploy` as commander registrations (help per command);
 * the work is in fleet.ts and fleet-deploy.ts. Split from cli.ts to keep one concern a file.
 */
import type { Command } from "commander";
import type { OutputOptions } from "./output.js";
import type { FleetFlags } from "./fleet-flags.js";

/** The part of the CLI's per-command context the fleet commands use. */
export interface FleetCtx {
  out: OutputOptions;
  stateDir: string;
  controller: string | undefined;
}

/** Wraps a command's body (command-context.ts: typed errors and exit codes). */
export type FleetAction = <A extends unknown[]>(
  body: (ctx: FleetCtx, ...args: A) => Promise<number | void>,
) => Parameters<Command["action"]>[0];

export function registerFleetCommands(program: Command, action: FleetAction): void {
  const fleet = program
    .command("fleet")
    .description("owner: the fleet's machine identities (join tokens, certificates) and deploying agents over SSH");
  const fleetFlags = (ctx: FleetCtx, o: Partial<Omit<FleetFlags, "stateDir" | "controller">>): FleetFlags => ({
    stateDir: ctx.stateDir,
    controller: ctx.controller,
    machine: o.machine,
    ttl: o.ttl,
    identity: o.identity,
    port: o.port,
    acceptNew: o.acceptNew ?? false,
    rollback: o.rollback ?? false,
    yes: o.yes ?? false,
    knownHosts: o.knownHosts,
    agentUrl: o.agentUrl,
    remoteDir: o.remoteDir,
  });
  fleet
    .command("enroll")
    .description("a single-use join token bound to NAME, with the line to run on that machine")
    .argument("<name>", "the machine's name in the fleet")
    .option("--ttl <duration>", "how long the token stays valid: 15m, 90s, 2h, 1d (default 15m)")
    .action(
      action(async (ctx, name: string, o: { ttl?: string }) => {
        const { fleetCommand } = await import("./fleet.js");
        return fleetCommand(["enroll", name], fleetFlags(ctx, { ttl: o.ttl }), ctx.out);
      }),
    );
  fleet
    .command("list")
    .description("machines with status, agent version, platform, certificate expiry and last seen")
    .action(
      action(async (ctx) => {
        const { fleetCommand } = await import("./fleet.js");
        return fleetCommand(["list"], fleetFlags(ctx, {}), ctx.out);
      }),
    );
  fleet
    .command("revoke")
    .description("refuse NAME's certificates and cut its live links (other replicas cut theirs within seconds)")
    .argument("<name>", "the machine")
    .action(
      action(async (ctx, name: string) => {
        const { fleetCommand } = await import("./fleet.js");
        return fleetCommand(["revoke", name], fleetFlags(ctx, {}), ctx.out);
      }),
    );
  fleet
    .command("remove")
    .alias("rm")
    .description("forget a revoked or offline machine with its seats and certificates, once confirmed; receipts stay")
    .argument("<name>", "the machine")
    .option("-y, --yes", "do not ask for confirmation (scripts)")
    .addHelpText(
      "after",
      "\nRefuses a machine that is online and not revoked: revoke it first (clankie fleet revoke NAME)." +
        "\nIt cannot come back without a new join token (clankie fleet enroll NAME)." +
        "\nWithout --yes the answer is read from stdin; end of input is no.",
    )
    .action(
      action(async (ctx, name: string, o: { yes?: boolean }) => {
        const { fleetCommand } = await import("./fleet.js");
        return fleetCommand(["remove", name], fleetFlags(ctx, { yes: o.yes }), ctx.out);
      }),
    );
  fleet
    .command("deploy")
    .description("install or upgrade a node agent on SSH_TARGET over SSH, enrolled as --machine, as a user service")
    .argument("<ssh-target>", "user@host of the target")
    .requiredOption("--machine <name>", "the machine's name in the fleet")
    .option("--identity <file>", "the SSH private key")
    .option("--port <n>", "the SSH port")
    .option("--accept-new", "trust an unknown host key on first contact (then pinned)")
    .option("--rollback", "go back to the previous agent version on the target")
    .option("--known-hosts <file>", "the known_hosts file to check and pin host keys in")
    .option(
      "--remote-dir <dir>",
      "where the agent is installed on the target (default ~/.clankie-agent; on Windows %LOCALAPPDATA%\\clankie-agent)",
    )
    .option("--controller-agent-url <url>", "the agent URL the target dials, when it differs from the controller's own")
    .addHelpText(
      "after",
      "\nThe service follows the target's OS: a systemd user unit on Linux (a supervisor script without a user systemd), a launchd LaunchAgent on macOS, a Scheduled Task at the user's logon on Windows (deploy/README.md says what has run where).\nProgress is printed one step at a time (on stderr with --json, whose report is the one stdout line).",
    )
    .action(
      action(
        async (
          ctx,
          target: string,
          o: {
            machine: string;
            identity?: string;
            port?: string;
            acceptNew?: boolean;
            rollback?: boolean;
            knownHosts?: string;
            remoteDir?: string;
            controllerAgentUrl?: string;
          },
        ) => {
          const { fleetCommand } = await import("./fleet.js");
          return fleetCommand(["deploy", target], fleetFlags(ctx, { ...o, agentUrl: o.controllerAgentUrl }), ctx.out);
        },
      ),
    );
}
