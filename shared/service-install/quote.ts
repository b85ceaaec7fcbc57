/**
 * Escaping for each service format the node-agent templates are rendered into: a value goes
 * into a template only through one of these, so a path with spaces, quotes, `%`, `$`, `&`,
 * `<` or non-ASCII letters arrives as the same bytes it left.
 */

/** One systemd ExecStart word: double-quoted, `\` and `"` escaped, `%` and `$` doubled (specifiers, variables). */
export function systemdWord(arg: string): string {
  return `"${arg.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/%/g, "%%").replace(/\$/g, "$$$$")}"`;
}

/** A systemd setting's value that is not split into words (WorkingDirectory=): only specifiers need doubling. */
export function systemdValue(value: string): string {
  return value.replace(/%/g, "%%");
}

/** Text in XML character data. */
export function xmlText(value: string): string {
  return value
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

/** The inside of a PowerShell single-quoted string: only `'` (and its typographic forms) is special, doubled. */
export function powershellSingleQuoted(value: string): string {
  return value.replace(/['\u2018\u2019\u201A\u201B]/g, (q) => q + q);
}

/**
 * One argument for a Windows command line, so that CommandLineToArgvW gives it back whole:
 * quoted when it holds a space, tab or quote (or is empty), backslashes doubled before a
 * quote and at the end, quotes escaped as `\"`.
 */
export function windowsArg(arg: string): string {
  if (arg !== "" && !/[ \t"]/.test(arg)) return arg;
  let out = '"';
  for (let i = 0; i < arg.length; i++) {
    let slashes = 0;
    while (arg[i] === "\\") slashes++, i++;
    if (i === arg.length) {
      out += "\\".repeat(slashes * 2);
      break;
    }
    if (arg[i] === '"') out += "\\".repeat(slashes * 2 + 1) + '"';
    else out += "\\".repeat(slashes) + arg[i];
  }
  return `${out}"`;
}
