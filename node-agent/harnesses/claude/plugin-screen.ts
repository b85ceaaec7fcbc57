/**
 * What Claude Code's startup banner says when it will not take the clankie-worker plugin as this
 * session's channel. Observed with the pinned 2.1.197 under `--channels plugin:clankie-worker@clankie`
 * (test/harnesses/hire-claude-plugin-refused.test.ts): the banner lists the entry with why it is
 * unmatched — "not on the approved channels allowlist" (Anthropic's list), "not on your org's
 * approved channels list" (managed allowedChannelPlugins), or "plugin not installed" — and a 12 s
 * notice repeats the first two. The channel server still starts, but Claude never registers its
 * notifications, so the session can never take a native message: the hire fails it for good.
 */
import type { ScreenBlock } from "../../hire/launcher.js";

export const CLAUDE_PLUGIN = "clankie-worker@clankie";

const NOT_ALLOWED =
  /clankie-worker@clankie\s*(?:·|is)?\s*not on (?:the approved channels allowlist|your org's approved channels list)/i;
const NOT_INSTALLED = /plugin:clankie-worker@clankie\s*·\s*plugin not installed/i;

export function channelRefusal(screen: string, paneId: string): ScreenBlock | undefined {
  const flat = screen.replace(/\s+/g, " ");
  if (NOT_INSTALLED.test(flat)) {
    return {
      kind: "channel_plugin_not_installed",
      definite: true,
      fix: `Claude in pane ${paneId} has no ${CLAUDE_PLUGIN} plugin, so it has no Clankie channel; the hire closed the pane. Run \`clankie claude install-plugin\` (with --config-dir for the CLAUDE_CONFIG_DIR the agent's Claude uses), or hire with the agent option claudeChannel: "development".`,
    };
  }
  if (NOT_ALLOWED.test(flat)) {
    return {
      kind: "channel_plugin_not_allowed",
      definite: true,
      fix:
        `Claude in pane ${paneId} refused the ${CLAUDE_PLUGIN} channel: the plugin is not on its channel allowlist (Anthropic's, or the org's allowedChannelPlugins), so the session could never take a Clankie message; the hire closed the pane. ` +
        `Hire with the agent option claudeChannel: "development" and confirm the development-channel prompt in the pane, or have an administrator set channelsEnabled: true and allowedChannelPlugins [{"marketplace":"clankie","plugin":"clankie-worker"}] in Claude's managed settings.`,
    };
  }
  return undefined;
}
