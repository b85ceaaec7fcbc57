/**
 * How the agent runs on macOS: a launchd LaunchAgent for the SSH user (the one who owns the
 * panes), rendered from deploy/macos/dev.clankie.agent.plist with absolute paths (launchd
 * expands no "~"), installed in ~/Library/LaunchAgents and (re)loaded with launchctl. The GUI
 * domain is used when the user has a login session (where their panes are); otherwise the
 * background `user/UID` domain, so an SSH-only Mac still runs the agent.
 */
import { renderAgentService } from "../../shared/service-install/render.js";
import { shQuote as q } from "./target.js";

export const LAUNCHD_LABEL = "dev.clankie.agent";
export const LAUNCHD_PLIST = `${LAUNCHD_LABEL}.plist`;

/** The LaunchAgent for the release `current` points at, with the same agent command as Linux's unit. */
export function launchdPlist(dir: string, node: string): string {
  const [plist] = renderAgentService("launchd", {
    node,
    main: `${dir}/current/dist/cli/main.js`,
    agentArgs: ["--state-dir", `${dir}/state`, "--log-level", "info"],
    stateDir: `${dir}/state`,
    logDir: dir,
    name: LAUNCHD_LABEL,
  });
  return plist!.content;
}

/**
 * Copies the plist into ~/Library/LaunchAgents, boots out a loaded one, bootstraps it again
 * (retrying: a bootout finishes asynchronously) and kickstarts it; the last line names the domain.
 */
export function launchdRestartCommands(dir: string): string {
  const svc = `"$domain/${LAUNCHD_LABEL}"`;
  return [
    `plist="$HOME/Library/LaunchAgents/${LAUNCHD_PLIST}"`,
    `mkdir -p "$HOME/Library/LaunchAgents" && cp ${q(dir)}/${LAUNCHD_PLIST} "$plist" && chmod 644 "$plist" || exit 1`,
    `uid=$(id -u)`,
    `if launchctl print "gui/$uid" >/dev/null 2>&1; then domain="gui/$uid"; else domain="user/$uid"; fi`,
    `launchctl bootout ${svc} >/dev/null 2>&1 || true`,
    `ok=""`,
    `for i in 1 2 3 4 5 6 7 8 9 10; do launchctl bootstrap "$domain" "$plist" 2>/dev/null && { ok=1; break; }; sleep 0.5; done`,
    `[ -n "$ok" ] || { launchctl bootstrap "$domain" "$plist"; exit 1; }`,
    `launchctl kickstart -k ${svc} || exit 1`,
    `echo "launchd ($domain)"`,
  ].join("\n");
}
