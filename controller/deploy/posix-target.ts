/**
 * `fleet deploy` on Linux and macOS, through the target's POSIX sh. The two differ only where
 * their tools do: Linux swaps the `current` link atomically with GNU `mv -T` and runs the agent
 * as a systemd user unit (or a supervisor script where no user systemd answers); macOS has BSD
 * tools (no `mv -T`: `ln -sfn` replaces the link) and runs the agent as a launchd LaunchAgent.
 */
import type { AgentBundle } from "./agent-bundle.js";
import type { SshSession } from "./ssh-session.js";
import { must, shQuote, type DeployTarget, type TargetFacts } from "./target.js";
import { launchdPlist, launchdRestartCommands, LAUNCHD_PLIST } from "./launchd-unit.js";
import { restartCommands, runScript, supervisorScript, systemdUserUnit } from "./service-unit.js";

const q = shQuote;

/** node on PATH, else where Homebrew and the official installers put it (a non-login SSH shell on macOS lacks /opt/homebrew/bin). */
export const NODE_LOOKUP = `command -v node || for p in /opt/homebrew/bin/node /usr/local/bin/node; do [ -x "$p" ] && { echo "$p"; exit 0; }; done; exit 1`;

/** The command that points `link` at `target`: atomic on Linux (GNU mv -T); on macOS `ln -sfn` (-n: replace the link, do not follow it). */
export function linkCommand(os: "Linux" | "Darwin", target: string, link: string): string {
  return os === "Linux"
    ? `ln -sfn ${q(target)} ${q(link)}.new && mv -T ${q(link)}.new ${q(link)}`
    : `ln -sfn ${q(target)} ${q(link)}`;
}

/** The files that run the agent on this OS: [name in the install dir, content, mode]. */
export function serviceFiles(os: "Linux" | "Darwin", dir: string, node: string): [string, string, string][] {
  if (os === "Darwin") return [[LAUNCHD_PLIST, launchdPlist(dir, node), "644"]];
  return [
    ["run-agent.sh", runScript(dir, node), "755"],
    ["supervise.sh", supervisorScript(dir), "755"],
    ["clankie-agent.service", systemdUserUnit(dir, node), "644"],
  ];
}

export function posixTarget(ssh: SshSession, os: "Linux" | "Darwin"): DeployTarget {
  return {
    os,
    async inspect(remoteDir) {
      const node = (await ssh.exec(NODE_LOOKUP)).stdout.trim().split("\n").pop() ?? "";
      const version = node ? await must(ssh, `${q(node)} --version`, "node --version") : "";
      const home = await must(ssh, 'printf %s "$HOME"', "HOME");
      const dir = remoteDir ?? `${home}/.clankie-agent`;
      await must(
        ssh,
        `mkdir -p ${q(dir)}/releases ${q(dir)}/state && chmod 700 ${q(dir)} ${q(dir)}/state`,
        "create the install directory",
      );
      const freeKb = Number((await must(ssh, `df -Pk ${q(dir)} | awk 'NR==2 {print $4}'`, "df")).trim());
      const current = (await ssh.exec(`readlink ${q(dir)}/current`)).stdout.trim() || undefined;
      const previous = (await ssh.exec(`readlink ${q(dir)}/previous`)).stdout.trim() || undefined;
      const identity = (await ssh.exec(`cat ${q(dir)}/state/identity/identity.json`)).stdout.trim();
      const machine = identity ? (JSON.parse(identity) as { machine?: string }).machine : undefined;
      return { os, node, version, dir, freeKb, current, previous, machine };
    },
    async unpack(f: TargetFacts, bundle: AgentBundle) {
      const rel = `${f.dir}/releases/${bundle.releaseId}`;
      await ssh.upload(bundle.file, `${rel}.tgz`);
      await must(
        ssh,
        `mkdir -p ${q(rel)} && tar -xzf ${q(rel)}.tgz -C ${q(rel)} && rm -f ${q(rel)}.tgz`,
        "unpack the agent",
      );
      await must(ssh, `${q(f.node)} ${q(rel)}/dist/cli/main.js --help >/dev/null`, "the copied agent does not start");
      return rel;
    },
    enroll: (f, release, agentUrl, machine, token) =>
      must(
        ssh,
        `${q(f.node)} ${q(release)}/dist/cli/main.js agent --join-only --join - --json --controller ${q(agentUrl)} --state-dir ${q(f.dir)}/state --machine ${q(machine)}`,
        "enrollment refused",
        token + "\n",
      ),
    async activate(f, release, previous) {
      const cmds = [
        ...(previous ? [linkCommand(os, previous, `${f.dir}/previous`)] : []),
        linkCommand(os, release, `${f.dir}/current`),
      ];
      await must(ssh, cmds.join(" && "), "switch releases");
    },
    async restart(f) {
      for (const [name, body, mode] of serviceFiles(os, f.dir, f.node))
        await must(
          ssh,
          `cat > ${q(f.dir)}/${name}.new && chmod ${mode} ${q(f.dir)}/${name}.new && mv ${q(f.dir)}/${name}.new ${q(f.dir)}/${name}`,
          `write ${name}`,
          body,
        );
      const how = await must(
        ssh,
        os === "Darwin" ? launchdRestartCommands(f.dir) : restartCommands(f.dir),
        "start the agent",
      );
      return how.split("\n").pop()!;
    },
    async prune(f) {
      await ssh.exec(
        `cd ${q(f.dir)}/releases && ls -1t | tail -n +4 | while read r; do [ "$PWD/$r" = "$(readlink ../current)" ] || [ "$PWD/$r" = "$(readlink ../previous)" ] || rm -rf "$r"; done`,
      );
    },
  };
}
