/**
 * How the agent runs on the target. Linux with a user systemd: a systemd user unit
 * (~/.config/systemd/user/clankie-agent.service, Restart=on-failure). Linux without one (a
 * container, a box without lingering): a small supervisor script under the install
 * directory, started detached, which restarts the agent with backoff. The unit is rendered
 * from deploy/linux/clankie-agent.user.service by shared/service-install/render.ts. macOS's
 * LaunchAgent is in launchd-unit.ts, Windows' Scheduled Task in windows-target.ts.
 */
import { renderAgentService } from "../../shared/service-install/render.js";

export function runScript(dir: string, node: string): string {
  return [
    "#!/bin/sh",
    "# Written by clankie fleet deploy: the agent on its stored identity (no token).",
    `exec ${node} ${dir}/current/dist/cli/main.js agent --state-dir ${dir}/state --log-level info`,
    "",
  ].join("\n");
}

/** The systemd user unit, rendered from deploy/linux/ (i15's renderer; ADR 0070): the same agent command as run-agent.sh. */
export function systemdUserUnit(dir: string, node: string): string {
  const [unit] = renderAgentService("systemd-user", {
    node,
    main: `${dir}/current/dist/cli/main.js`,
    agentArgs: ["--state-dir", `${dir}/state`, "--log-level", "info"],
    stateDir: `${dir}/state`,
  });
  return unit!.content;
}

export function supervisorScript(dir: string): string {
  return [
    "#!/bin/sh",
    "# Written by clankie fleet deploy: keeps the agent running where no user systemd is available.",
    `echo $$ > ${dir}/supervisor.pid`,
    "backoff=1",
    "while :; do",
    `  started=$(date +%s)`,
    `  ${dir}/run-agent.sh >> ${dir}/agent.log 2>&1 &`,
    `  echo $! > ${dir}/agent.pid`,
    "  wait $!",
    `  [ -f ${dir}/stopping ] && exit 0`,
    "  [ $(( $(date +%s) - started )) -gt 30 ] && backoff=1",
    "  sleep $backoff",
    "  [ $backoff -lt 30 ] && backoff=$((backoff * 2))",
    "done",
    "",
  ].join("\n");
}

/** Stops whatever runs the agent now (unit or supervisor), then starts the current release. */
export function restartCommands(dir: string): string {
  return [
    `if systemctl --user show-environment >/dev/null 2>&1; then`,
    `  mkdir -p ~/.config/systemd/user && cp ${dir}/clankie-agent.service ~/.config/systemd/user/clankie-agent.service`,
    `  systemctl --user daemon-reload && systemctl --user enable clankie-agent >/dev/null 2>&1 && systemctl --user restart clankie-agent && echo systemd-user`,
    `else`,
    `  touch ${dir}/stopping`,
    `  [ -f ${dir}/supervisor.pid ] && kill $(cat ${dir}/supervisor.pid) 2>/dev/null`,
    `  [ -f ${dir}/agent.pid ] && kill $(cat ${dir}/agent.pid) 2>/dev/null`,
    `  for i in 1 2 3 4 5 6 7 8 9 10; do [ -f ${dir}/agent.pid ] && kill -0 $(cat ${dir}/agent.pid) 2>/dev/null || break; sleep 0.3; done`,
    `  rm -f ${dir}/stopping`,
    `  setsid nohup ${dir}/supervise.sh > /dev/null 2>&1 < /dev/null &`,
    `  echo supervisor`,
    `fi`,
  ].join("\n");
}
