/**
 * Recognising the Claude Code CLI from a process's argv, on every OS: its native binary
 * (`claude`, `claude.exe`), the npm bin run by node, or node running the package's
 * `@anthropic-ai/claude-code/cli.js` (Windows' npm shim). Print mode is not an interactive seat.
 */
import { programName } from "../../proofs/provider.js";

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
