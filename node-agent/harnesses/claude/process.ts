/**
 * Recognising the Claude Code CLI from a process's argv, on every OS: its native binary
 * (`claude`, `claude.exe`), the npm bin run by node, or node running the package's
 * `@anthropic-ai/claude-code/cli.js` (Windows' npm shim). Print mode is not an interactive seat.
 */
import { programName } from "../../proofs/provider.js";
import { CHANNEL_SERVER_NAME } from "./channel-wire.js";

export function isClaude(argv: string[]): boolean {
  if (argv.slice(0, 2).some((a) => programName(a) === "claude")) return true;
  return (
    /^(node|nodejs)$/.test(programName(argv[0] ?? "")) &&
    /@anthropic-ai[\\/]claude-code[\\/]cli\.m?js$/i.test(argv[1] ?? "")
  );
}

export function isPrintMode(argv: string[]): boolean {
  return argv.includes("-p") || argv.includes("--print");
}

/** Started with the Clankie channel opt-in: the development flag naming our server or plugin, or --channels with our plugin. */
export function optedIn(argv: string[]): boolean {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
    const value = inline ?? argv[i + 1] ?? "";
    if (
      flag === "--dangerously-load-development-channels" &&
      value.split(/[ ,]/).some((v) => v === `server:${CHANNEL_SERVER_NAME}` || v.startsWith("plugin:clankie-worker@"))
    )
      return true;
    if (flag === "--channels" && /(^|[ ,])plugin:clankie-worker@/.test(value)) return true;
  }
  return false;
}
