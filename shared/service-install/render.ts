/**
 * Renders the node agent's service definition for one OS from the templates in
 * deploy/linux/ (a systemd user unit), deploy/macos/ (a launchd LaunchAgent) and deploy/windows/ (the
 * PowerShell scripts that install or remove a Scheduled Task). Every service runs
 * as the user who owns the panes. `clankie fleet deploy` writes these files; the values are
 * checked here (absolute paths for the target OS, never `~`, which launchd does not expand)
 * and each is escaped for its format (quote.ts). A template placeholder left unfilled, or a
 * value for a placeholder the template lacks, is an error, never a silent blank.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, posix, win32 } from "node:path";
import { fileURLToPath } from "node:url";
import { powershellSingleQuoted, systemdValue, systemdWord, windowsArg, xmlText } from "./quote.js";

export type AgentServiceKind = "systemd-user" | "launchd" | "windows-task";

export interface AgentServiceValues {
  /** Absolute path of the node binary on the target. */
  node: string;
  /** Absolute path of clankie's CLI entry (dist/cli/main.js) on the target. */
  main: string;
  /** `clankie agent` arguments after the subcommand, e.g. ["--state-dir", D] (the agent holds its own enrolled identity there). */
  agentArgs: string[];
  /** Absolute state directory (also the working directory). */
  stateDir: string;
  /** Absolute log directory (launchd only; systemd logs to the journal, the Scheduled Task to the state dir). */
  logDir?: string | undefined;
  /** launchd label / Windows task name (default dev.clankie.agent / "Clankie Fleet agent"). */
  name?: string | undefined;
}

export interface RenderedFile {
  /** File name to write (where it goes is in the template's own install note and deploy/README.md). */
  fileName: string;
  content: string;
}

export class ServiceValueError extends Error {
  readonly code = "invalid_service_value";
}

/** deploy/ beside the package root (one folder per OS: linux/, macos/, windows/), from source (shared/…) or the build (dist/shared/…). */
export function templatesDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++, dir = dirname(dir)) {
    const candidate = join(dir, "deploy");
    if (existsSync(join(candidate, "windows", "install-agent.ps1"))) return candidate;
  }
  throw new ServiceValueError("deploy/ (with linux/, macos/ and windows/) was not found beside this package");
}

function fill(template: string, values: Record<string, string>, name: string): string {
  const used = new Set<string>();
  const out = template.replace(/\{\{([A-Z_]+)\}\}/g, (_m, key: string) => {
    if (!(key in values)) throw new ServiceValueError(`${name}: no value for placeholder ${key}`);
    used.add(key);
    return values[key]!;
  });
  const unused = Object.keys(values).filter((k) => !used.has(k));
  if (unused.length) throw new ServiceValueError(`${name}: the template has no placeholder ${unused.join(", ")}`);
  return out;
}

function check(kind: AgentServiceKind, v: AgentServiceValues): void {
  const isAbsolute =
    kind === "windows-task" ? (p: string) => win32.isAbsolute(p) && /^[A-Za-z]:\\|^\\\\/.test(p) : posix.isAbsolute;
  const paths: [string, string | undefined][] = [
    ["node", v.node],
    ["main", v.main],
    ["stateDir", v.stateDir],
    ["logDir", v.logDir],
  ];
  for (const [what, p] of paths) {
    if (p === undefined) continue;
    if (!isAbsolute(p) || p.includes("~") || /[\0\r\n]/.test(p))
      throw new ServiceValueError(
        `${what} must be an absolute ${kind === "windows-task" ? "Windows" : "POSIX"} path without "~" or line breaks, got ${JSON.stringify(p)}`,
      );
  }
  for (const a of v.agentArgs)
    if (/[\0\r\n]/.test(a))
      throw new ServiceValueError(`agent argument ${JSON.stringify(a)} holds a line break or NUL`);
  // launchd expands no "~"; the agent would look for a file literally named "~".
  if (kind === "launchd" && v.agentArgs.some((a) => a.startsWith("~")))
    throw new ServiceValueError('launchd does not expand "~": give absolute paths');
  if (kind === "launchd" && v.logDir === undefined) throw new ServiceValueError("launchd needs logDir");
  if (v.name !== undefined && !/^[A-Za-z0-9][A-Za-z0-9. _-]{0,63}$/.test(v.name))
    throw new ServiceValueError(
      `service name ${JSON.stringify(v.name)} must be 1-64 letters, digits, '.', ' ', '_' or '-'`,
    );
}

const read = (file: string, dir: string) => readFileSync(join(dir, file), "utf8");

/** The file(s) that install the node agent as a service of `kind`. */
export function renderAgentService(
  kind: AgentServiceKind,
  v: AgentServiceValues,
  dir: string = templatesDir(),
): RenderedFile[] {
  check(kind, v);
  const argv = ["agent", ...v.agentArgs];
  if (kind === "systemd-user") {
    const t = read("linux/clankie-agent.user.service", dir);
    return [
      {
        fileName: "clankie-agent.service",
        content: fill(
          t,
          {
            NODE: systemdWord(v.node),
            MAIN: systemdWord(v.main),
            ARGS: argv.map(systemdWord).join(" "),
            STATE_DIR: systemdValue(v.stateDir),
          },
          kind,
        ),
      },
    ];
  }
  if (kind === "launchd") {
    const label = v.name ?? "dev.clankie.agent";
    if (!/^[A-Za-z0-9]+(\.[A-Za-z0-9-]+)*$/.test(label) || label.includes("--"))
      throw new ServiceValueError(`launchd label ${JSON.stringify(label)} must be reverse-DNS`);
    const args = [v.node, v.main, ...argv].map((a) => `    <string>${xmlText(a)}</string>`).join("\n");
    const t = read("macos/dev.clankie.agent.plist", dir);
    return [
      {
        fileName: `${label}.plist`,
        content: fill(
          t,
          {
            LABEL: xmlText(label),
            PROGRAM_ARGUMENTS: args,
            STATE_DIR: xmlText(v.stateDir),
            LOG_DIR: xmlText(v.logDir!),
          },
          kind,
        ),
      },
    ];
  }
  const task = v.name ?? "Clankie Fleet agent";
  // Windows PowerShell 5.1 reads a BOM-less script in the ANSI code page: the BOM keeps non-ASCII paths intact.
  const BOM = "\uFEFF";
  const line = [v.main, ...argv].map(windowsArg).join(" ");
  return [
    {
      fileName: "install-agent.ps1",
      content:
        BOM +
        fill(
          read("windows/install-agent.ps1", dir),
          {
            TASK_NAME: powershellSingleQuoted(task),
            NODE: powershellSingleQuoted(v.node),
            ARGUMENT_LINE: powershellSingleQuoted(line),
            STATE_DIR: powershellSingleQuoted(v.stateDir),
          },
          kind,
        ),
    },
    {
      fileName: "uninstall-agent.ps1",
      content: BOM + fill(read("windows/uninstall-agent.ps1", dir), { TASK_NAME: powershellSingleQuoted(task) }, kind),
    },
  ];
}
