/**
 * Issue 37 item 2: `clankie completion zsh`, loaded as its header says (`source <(clankie
 * completion zsh)` after compinit) in a real interactive zsh on a pseudo-terminal, completes on
 * Tab: commands, aliases, option names and an option's choices. Each candidate zsh would offer is
 * read through compadd, as zsh-capture-completion does, rather than from the drawn menu. (bash:
 * test/e2e/operator-cli.test.ts.)
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { assertBuilt, CLI } from "../kit/cli.js";
import { available } from "../kit/requirements.js";
import { tempDir } from "../kit/test-db.js";

/** The zsh script that drives the interactive shell: `try LINE` types LINE and Tab, and prints the candidates. */
const DRIVER = String.raw`
zmodload zsh/zpty
zpty z env PATH="$BIN:$PATH" HOME="$ZHOME" TERM=dumb zsh -f -i
zpty -w z 'PS1=""; autoload -U compinit; compinit -u -D; source <(clankie completion zsh)'
zpty -w z 'compadd () { local -a h; builtin compadd -O h "$@"; print -l -- "" "$^h<hit" >/dev/tty;'
zpty -w z '  builtin compadd "$@" }'
zpty -w z 'echo READY'
zpty -r -m z out '*READY*READY*'
try() {
  local o="" all="" tries=0
  zpty -w -n z "$1"$'\t'
  # Candidates arrive once the completion function has run clankie's script; wait for the first.
  while (( tries++ < 100 )) && [[ $all != *'<hit'* ]]; do zpty -r -t z o && all+=$o || sleep 0.1; done
  sleep 0.3; while zpty -r -t z o; do all+=$o; done
  print -r -- "$1|$(print -r -- $all | tr -d '\r' | sed -n 's/^\(..*\)<hit$/\1/p' | tr '\n' ' ')"
  zpty -w -n z $'\C-c'
  sleep 0.3; while zpty -r -t z o; do :; done
}
try 'clankie rec'
try 'clankie seat r'
try 'clankie fleet list -o '
try 'clankie receipts list --s'
try 'clankie completion '
zpty -d z
`;

describe.runIf(available("zsh"))("issue 37 item 2: zsh completion in an interactive zsh", () => {
  it("completes commands, aliases, options and choices on Tab", () => {
    assertBuilt();
    const dir = tempDir("i37-zsh");
    const bin = join(dir, "bin");
    mkdirSync(bin);
    mkdirSync(join(dir, "home"));
    writeFileSync(join(bin, "clankie"), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
    chmodSync(join(bin, "clankie"), 0o755);
    const out = execFileSync("zsh", ["-f", "-c", DRIVER], {
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "", BIN: bin, ZHOME: join(dir, "home") },
      timeout: 60_000,
    });
    // Each typed line, with the distinct candidates zsh offered for it, sorted.
    const offered = new Map(
      out
        .trim()
        .split("\n")
        .map((l) => l.split("|") as [string, string])
        .map(([line, hits]) => [line, [...new Set(hits.split(" ").filter(Boolean))].sort()]),
    );
    expect(offered.get("clankie rec")).toEqual(["receipts"]);
    expect(offered.get("clankie seat r")).toEqual(["remove", "rm"]);
    expect(offered.get("clankie fleet list -o ")).toEqual(["json", "table"]);
    expect(offered.get("clankie receipts list --s")).toEqual(["--seat", "--since", "--state", "--state-dir"]);
    expect(offered.get("clankie completion ")).toEqual(expect.arrayContaining(["bash", "zsh"]));
  });
});
