/**
 * The node agent's service definitions (issue 15, deploy/{linux,macos,windows} + shared/service-install):
 * the launchd LaunchAgent parses as a plist (the pinned `plist` package) with exactly the
 * intended ProgramArguments and no `~`; the systemd user unit passes `systemd-analyze verify
 * --user` (skipped, and counted as such, only where systemd-analyze is not installed);
 * the Windows install script's argument line splits back, by CommandLineToArgvW's rules, into
 * exactly the intended argv (PowerShell itself cannot run here). Values are escaped for each
 * format; bad values are typed errors.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parsePlist } from "plist";
import { afterAll, describe, expect, it } from "vitest";
import { renderAgentService, ServiceValueError } from "../../../shared/service-install/render.js";
import { systemdWord, windowsArg } from "../../../shared/service-install/quote.js";
import { splitWindowsCommandLine } from "../../../node-agent/proofs/windows-parse.js";
import { available } from "../../kit/requirements.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const temp = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};

const TRICKY = '/Users/Jürgen Ö/Clankie & <co> "it\'s" 50%$HOME';
const args = (stateDir: string) => [
  "--controller",
  "https://ctl.example:7420",
  "--fleet-token-file",
  `${stateDir}/fleet.token`,
  "--state-dir",
  stateDir,
  "--pane-host",
  "tmux",
];

describe("service-install.renderAgentService", () => {
  it("launchd: a plist that parses, whose ProgramArguments are exactly node, main and the agent's arguments, with no ~", () => {
    const [file] = renderAgentService("launchd", {
      node: "/opt/homebrew/bin/node",
      main: `${TRICKY}/dist/cli/main.js`,
      agentArgs: args(TRICKY),
      stateDir: TRICKY,
      logDir: `${TRICKY}/logs`,
    });
    expect(file!.fileName).toBe("dev.clankie.agent.plist");
    const p = parsePlist(file!.content) as Record<string, unknown>;
    expect(p).toMatchObject({
      Label: "dev.clankie.agent",
      KeepAlive: true,
      RunAtLoad: true,
      WorkingDirectory: TRICKY,
      StandardErrorPath: `${TRICKY}/logs/agent.err.log`,
    });
    expect(p.ProgramArguments).toEqual([
      "/opt/homebrew/bin/node",
      `${TRICKY}/dist/cli/main.js`,
      "agent",
      ...args(TRICKY),
    ]);
    expect(JSON.stringify(p)).not.toContain("~");
  });

  it("launchd refuses ~, relative paths and a label that is not reverse-DNS", () => {
    const ok = {
      node: "/usr/local/bin/node",
      main: "/opt/clankie/main.js",
      agentArgs: [],
      stateDir: "/Users/w/.clankie",
      logDir: "/Users/w/.clankie",
    };
    expect(() =>
      renderAgentService("launchd", { ...ok, agentArgs: ["--fleet-token-file", "~/.clankie/fleet.token"] }),
    ).toThrow(ServiceValueError);
    expect(() => renderAgentService("launchd", { ...ok, stateDir: "~/.clankie" })).toThrow(/absolute/);
    expect(() => renderAgentService("launchd", { ...ok, node: "node" })).toThrow(/absolute/);
    expect(() => renderAgentService("launchd", { ...ok, name: "dev--x" })).toThrow(/reverse-DNS/);
  });

  it.skipIf(!available("systemd"))(
    "systemd user unit: passes systemd-analyze verify --user with spaces, %, $ and quotes in its paths",
    () => {
      const state = temp('c15 state %x$y"q ');
      const runtime = temp("c15-xdg-");
      const [file] = renderAgentService("systemd-user", {
        node: process.execPath,
        main: `${state}/main.js`,
        agentArgs: args(state),
        stateDir: state,
      });
      const unit = join(temp("c15-unit-"), file!.fileName);
      writeFileSync(unit, file!.content);
      const r = spawnSync("systemd-analyze", ["verify", "--user", unit], {
        env: { ...process.env, XDG_RUNTIME_DIR: runtime },
        encoding: "utf8",
      });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: "" });
      expect(file!.content).toContain("WantedBy=default.target");
    },
  );

  it.skipIf(!available("systemd"))(
    "systemd-analyze verify is a real check here: a unit with broken quoting fails it",
    () => {
      const runtime = temp("c15-xdg-");
      const unit = join(temp("c15-unit-"), "bad.service");
      writeFileSync(unit, `[Service]\nExecStart=${systemdWord(process.execPath)} "unterminated\n`);
      expect(
        spawnSync("systemd-analyze", ["verify", "--user", unit], { env: { ...process.env, XDG_RUNTIME_DIR: runtime } })
          .status,
      ).not.toBe(0);
    },
  );

  it("systemd words: quotes and backslashes escaped, % and $ doubled", () => {
    expect(systemdWord('a "b"\\c 50% $HOME')).toBe('"a \\"b\\"\\\\c 50%% $$HOME"');
  });

  it("Windows: the Scheduled Task's argument line splits back into exactly the agent's argv; the script is UTF-8 with a BOM", () => {
    const state = "C:\\Users\\Jürgen Ö\\AppData\\Local\\Clankie it's";
    const winArgs = [
      "--controller",
      "https://ctl.example:7420",
      "--fleet-token-file",
      `${state}\\fleet.token`,
      "--state-dir",
      `${state}\\`,
      "--pane-host",
      "herdr",
      'say "hi"',
      "",
    ];
    const [install, uninstall] = renderAgentService("windows-task", {
      node: "C:\\Program Files\\nodejs\\node.exe",
      main: `${state}\\clankie\\dist\\cli\\main.js`,
      agentArgs: winArgs,
      stateDir: state,
    });
    expect(install!.content.startsWith("\uFEFF")).toBe(true);
    const line = /-Argument '((?:[^']|'')*)'/.exec(install!.content)![1]!.replace(/''/g, "'");
    expect(splitWindowsCommandLine(`node.exe ${line}`).slice(1)).toEqual([
      `${state}\\clankie\\dist\\cli\\main.js`,
      "agent",
      ...winArgs,
    ]);
    expect(install!.content).toContain("-LogonType Interactive");
    expect(install!.content).toContain("-Execute 'C:\\Program Files\\nodejs\\node.exe'");
    expect(uninstall!.content).toContain("$taskName = 'Clankie Fleet agent'");
    expect(() =>
      renderAgentService("windows-task", { node: "/usr/bin/node", main: "C:\\x.js", agentArgs: [], stateDir: "C:\\s" }),
    ).toThrow(/Windows path/);
  });

  it("windowsArg round-trips through CommandLineToArgvW's rules for backslashes and quotes", () => {
    for (const a of [
      "plain",
      "with space",
      "",
      'q"uote',
      "trail\\",
      "trail space\\",
      '\\\\"x',
      "C:\\dir with space\\",
      "ä ö ü",
    ]) {
      expect(splitWindowsCommandLine(`x.exe ${windowsArg(a)}`)).toEqual(["x.exe", a]);
    }
  });

  it("no line breaks in values: a newline could add a unit setting or a script line", () => {
    expect(() =>
      renderAgentService("systemd-user", {
        node: "/usr/bin/node",
        main: "/m.js",
        agentArgs: ["--x\nExecStartPre=/bin/rm"],
        stateDir: "/s",
      }),
    ).toThrow(ServiceValueError);
  });
});
