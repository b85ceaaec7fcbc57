/**
 * Issue 10 item 5 (service units): `clankie fleet deploy` to a target that reports macOS
 * (Darwin) or Windows installs that OS's service — a launchd LaunchAgent, a Scheduled Task —
 * instead of being refused. No Mac or Windows host can run here, so a scripted SSH session
 * answers as one would (`uname -s`; PowerShell's platform) and records every command; the
 * test checks what would run there: the unit texts parse (plist) or split back into the exact
 * argv (the task's CommandLineToArgvW line), the sh scripts pass `sh -n`, the PowerShell
 * scripts decode from -EncodedCommand and fit cmd.exe's line limit, the join token is never on
 * a command line, and nothing uses a tool the target lacks (GNU `mv -T` on macOS, systemctl).
 * PowerShell itself cannot parse them here (no PowerShell on Debian or npm).
 * Linux deploys run for real over OpenSSH in test/netns/.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parsePlist } from "plist";
import { afterAll, describe, expect, it } from "vitest";
import { deploy, type DeployOptions, type DeployReport } from "../../../controller/deploy/deploy.js";
import type { AgentBundle } from "../../../controller/deploy/agent-bundle.js";
import type { ExecResult, SshSession } from "../../../controller/deploy/ssh-session.js";
import { detectOs } from "../../../controller/deploy/target.js";
import { linkCommand } from "../../../controller/deploy/posix-target.js";
import { launchdRestartCommands } from "../../../controller/deploy/launchd-unit.js";
import { CMD_MAX } from "../../../controller/deploy/windows-target.js";
import { splitWindowsCommandLine } from "../../../node-agent/proofs/windows-parse.js";

const TOKEN = "join_c14-token-never-on-a-command-line";
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), "c14-targets-"));
  dirs.push(d);
  return d;
};

interface Call {
  command: string;
  stdin: string | undefined;
  /** The script of a PowerShell -EncodedCommand, decoded. */
  script: string | undefined;
}

/** An SSH session that answers like a host of another OS would, recording what it was asked. */
function scriptedHost(answer: (c: Call) => ExecResult | undefined) {
  const calls: Call[] = [];
  const uploads: string[] = [];
  const files = new Map<string, string>();
  const session: SshSession = {
    hostKey: { kind: "known" },
    async exec(command, stdin) {
      const enc = / -EncodedCommand (\S+)$/.exec(command);
      const call = { command, stdin, script: enc ? Buffer.from(enc[1]!, "base64").toString("utf16le") : undefined };
      calls.push(call);
      return answer(call) ?? { code: 0, stdout: "", stderr: "" };
    },
    async upload(_local, remote) {
      uploads.push(remote);
    },
    async writeFile(remote, content) {
      files.set(remote, content);
    },
    close() {},
  };
  return { session, calls, uploads, files };
}

function tinyBundle(): AgentBundle {
  const d = temp();
  const file = join(d, "agent.tgz");
  writeFileSync(join(d, "x"), "x");
  execFileSync("tar", ["-czf", file, "-C", d, "x"]);
  return { file, releaseId: "0.1.0-abcdef123456", version: "0.1.0", bytes: 1 };
}

async function runDeploy(session: SshSession, extra: Partial<DeployOptions> = {}): Promise<DeployReport> {
  return deploy({
    target: { host: "mac.example", port: 22, username: "ann" },
    machine: "m1",
    identityFile: "/dev/null",
    knownHosts: "/dev/null",
    acceptNew: false,
    rollback: false,
    remoteDir: undefined,
    agentUrl: "https://ctl.example:7421",
    issueJoinToken: async () => TOKEN,
    waitOnline: async () => ({ agentVersion: "0.1.0" }),
    progress: () => {},
    buildBundle: tinyBundle,
    openSession: async () => session,
    ...extra,
  });
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("the deploy succeeded");
    },
    (e: unknown) => e as { code: string; message: string },
  );
const ok = (stdout: string): ExecResult => ({ code: 0, stdout, stderr: "" });
const enrolled = ok(`{"fleetId":"f","machine":"m1","notAfter":"2026-12-02T00:00:00.000Z"}\n`);

describe("fleet deploy to macOS: a launchd LaunchAgent", () => {
  /** How a fresh Mac with Homebrew's node answers; `over` answers first. */
  const macAnswer =
    (over: (c: Call) => ExecResult | undefined = () => undefined) =>
    (c: Call): ExecResult | undefined => {
      const o = over(c);
      if (o) return o;
      if (c.command === "uname -s") return ok("Darwin\n");
      if (c.command.startsWith("command -v node")) return ok("/opt/homebrew/bin/node\n");
      if (c.command.endsWith("--version")) return ok("v22.11.0\n");
      if (c.command.startsWith("printf %s")) return ok("/Users/ann");
      if (c.command.startsWith("df -Pk")) return ok("5000000\n");
      if (c.command.startsWith("readlink") || (c.command.startsWith("cat ") && c.command.endsWith("identity.json")))
        return { code: 1, stdout: "", stderr: "no such file" };
      if (c.command.includes("agent --join-only")) return enrolled;
      if (c.command.includes("launchctl")) return ok("launchd (gui/501)\n");
      return undefined;
    };
  const mac = () => scriptedHost(macAnswer());

  it("installs the plist for the current release and (re)loads it with launchctl; the token goes on stdin only", async () => {
    const host = mac();
    const report = await runDeploy(host.session);
    expect(report).toMatchObject({
      os: "Darwin",
      service: "launchd (gui/501)",
      identityKept: false,
      release: "0.1.0-abcdef123456",
    });
    expect(host.uploads).toEqual(["/Users/ann/.clankie-agent/releases/0.1.0-abcdef123456.tgz"]);
    const cmds = host.calls.map((c) => c.command);
    for (const c of cmds) expect(c).not.toContain(TOKEN);
    expect(host.calls.find((c) => c.command.includes("agent --join-only"))!.stdin).toBe(`${TOKEN}\n`);
    // BSD tools: no GNU `mv -T`, no systemd.
    expect(cmds.join("\n")).not.toMatch(/mv -T|systemctl/);
    const plistWrite = host.calls.find((c) =>
      c.command.startsWith("cat > '/Users/ann/.clankie-agent'/dev.clankie.agent.plist.new"),
    )!;
    const plist = parsePlist(plistWrite.stdin!) as Record<string, unknown>;
    expect(plist).toMatchObject({
      Label: "dev.clankie.agent",
      KeepAlive: true,
      RunAtLoad: true,
      WorkingDirectory: "/Users/ann/.clankie-agent/state",
    });
    expect(plist.ProgramArguments).toEqual([
      "/opt/homebrew/bin/node",
      "/Users/ann/.clankie-agent/current/dist/cli/main.js",
      "agent",
      "--state-dir",
      "/Users/ann/.clankie-agent/state",
      "--log-level",
      "info",
    ]);
    // The current link is set before the service starts, and every sh command parses.
    const link = cmds.findIndex((c) => c.includes("/current'") && c.startsWith("ln -sfn"));
    expect(link).toBeGreaterThan(-1);
    expect(link).toBeLessThan(cmds.findIndex((c) => c.includes("launchctl")));
    for (const c of cmds) expect(spawnSync("sh", ["-n", "-c", c]).status, c).toBe(0);
  });

  it("a rerun with the identity in place keeps it, and --rollback swaps current and previous with ln -sfn", async () => {
    const rel = (id: string) => `/Users/ann/.clankie-agent/releases/${id}`;
    const host = scriptedHost(
      macAnswer((c) => {
        if (c.command.startsWith("readlink") && c.command.includes("/current")) return ok(rel("new") + "\n");
        if (c.command.startsWith("readlink") && c.command.includes("/previous")) return ok(rel("old") + "\n");
        if (c.command.startsWith("cat ") && c.command.endsWith("identity.json")) return ok(`{"machine":"m1"}`);
        if (c.command.includes("launchctl")) return ok("launchd (user/501)");
        return undefined;
      }),
    );
    const report = await runDeploy(host.session, { rollback: true });
    expect(report).toMatchObject({
      os: "Darwin",
      release: "old",
      previous: "new",
      identityKept: true,
      service: "launchd (user/501)",
    });
    const swap = host.calls.find((c) => c.command.includes("ln -sfn"))!.command;
    expect(swap).toBe(
      `ln -sfn '${rel("new")}' '/Users/ann/.clankie-agent/previous' && ln -sfn '${rel("old")}' '/Users/ann/.clankie-agent/current'`,
    );
    expect(host.calls.some((c) => c.command.includes("--join"))).toBe(false);
  });

  it("a failure on the target keeps the target CLI's typed code (a used join token), else is failed_precondition, never internal; it says what was left", async () => {
    const used = scriptedHost(
      macAnswer((c) =>
        c.command.includes("agent --join-only")
          ? {
              code: 1,
              stdout: `{"error":{"code":"permission_denied","message":"this join token was already used; nothing was registered"}}\n`,
              stderr: "",
            }
          : undefined,
      ),
    );
    const e1 = await failure(runDeploy(used.session));
    expect(e1.code).toBe("permission_denied");
    expect(e1.message).toMatch(
      /^step 4\/6 \(enroll \(join token over stdin\)\) failed: enrollment refused: this join token was already used; nothing was registered\. Left behind on mac\.example: the copied release 0\.1\.0-abcdef123456 \(not active\)\.$/,
    );
    const denied = scriptedHost(
      macAnswer((c) =>
        c.command.startsWith("mkdir -p")
          ? { code: 1, stdout: "", stderr: "mkdir: /Users/ann/.clankie-agent: Permission denied" }
          : undefined,
      ),
    );
    const e2 = await failure(runDeploy(denied.session));
    expect(e2.code).toBe("failed_precondition");
    expect(e2.message).toMatch(
      /step 2\/6 \(check the target\) failed: create the install directory: exit 1: mkdir: .*Permission denied\. Nothing was left on mac\.example\./,
    );
  });

  it("ln -sfn, the macOS swap, replaces a link to a directory instead of creating one inside it (run here with real ln)", () => {
    const d = temp();
    for (const r of ["a", "b"]) mkdirSync(join(d, r));
    symlinkSync(join(d, "a"), join(d, "current"));
    execFileSync("sh", ["-c", linkCommand("Darwin", join(d, "b"), join(d, "current"))]);
    expect(readlinkSync(join(d, "current"))).toBe(join(d, "b"));
    expect(() => readlinkSync(join(d, "a", "b"))).toThrow();
  });

  it("the launchctl script picks the GUI domain when the user has a login session, else user/UID, and retries bootstrap", () => {
    // launchctl is macOS-only: a recorder stands in for it to run the script's own logic under sh here.
    const d = temp();
    const log = join(d, "launchctl.log");
    const bin = join(d, "bin");
    mkdirSync(bin);
    const fakeHome = join(d, "home");
    mkdirSync(fakeHome);
    writeFileSync(join(d, "dev.clankie.agent.plist"), "<plist/>");
    const recorder = (gui: boolean) =>
      `#!/bin/sh\necho "$*" >> ${log}\ncase "$1" in print) ${gui ? "exit 0" : "exit 113"};; bootstrap) n=$(grep -c '^bootstrap' ${log}); [ "$n" -ge 2 ] && exit 0 || exit 5;; esac\nexit 0\n`;
    for (const gui of [true, false]) {
      rmSync(log, { force: true });
      writeFileSync(join(bin, "launchctl"), recorder(gui), { mode: 0o755 });
      const out = execFileSync("sh", ["-c", launchdRestartCommands(d)], {
        env: { PATH: `${bin}:/usr/bin:/bin`, HOME: fakeHome },
      })
        .toString()
        .trim();
      const domain = gui ? `gui/${process.getuid!()}` : `user/${process.getuid!()}`;
      expect(out).toBe(`launchd (${domain})`);
      expect(execFileSync("cat", [log]).toString().trim().split("\n")).toEqual([
        `print gui/${process.getuid!()}`,
        `bootout ${domain}/dev.clankie.agent`,
        `bootstrap ${domain} ${fakeHome}/Library/LaunchAgents/dev.clankie.agent.plist`,
        `bootstrap ${domain} ${fakeHome}/Library/LaunchAgents/dev.clankie.agent.plist`,
        `kickstart -k ${domain}/dev.clankie.agent`,
      ]);
    }
  });
});

describe("fleet deploy's SSH errors", () => {
  it("a host that does not answer is host_unreachable (a real ssh2 connection to a closed port), not agent_unreachable", async () => {
    const { openSsh } = await import("../../../controller/deploy/ssh-session.js");
    const key = join(temp(), "id");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]);
    const closed = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, "127.0.0.1", () => {
        const port = (srv.address() as AddressInfo).port;
        srv.close(() => resolve(port));
      });
    });
    const e = await failure(
      openSsh(
        { host: "127.0.0.1", port: closed, username: "root" },
        { identityFile: key, knownHosts: join(temp(), "known_hosts"), acceptNew: true },
      ),
    );
    expect(e.code).toBe("host_unreachable");
    expect(e.message).toMatch(new RegExp(`^ssh root@127\\.0\\.0\\.1:${closed}: connect ECONNREFUSED`));
  });
});

describe("fleet deploy to Windows: a Scheduled Task, through PowerShell", () => {
  const DIR = "C:\\Users\\Ann Ö\\AppData\\Local\\clankie-agent";
  const NODE = "C:\\Program Files\\nodejs\\node.exe";
  const win = () =>
    scriptedHost((c) => {
      if (c.command === "uname -s")
        return { code: 1, stdout: "", stderr: "'uname' is not recognized as an internal or external command" };
      if (c.command.includes("[Environment]::OSVersion.Platform")) return ok("Win32NT\r\n");
      if (c.script?.includes("ConvertTo-Json"))
        return ok(
          JSON.stringify({
            node: NODE,
            version: "v22.11.0",
            dir: DIR,
            freeKb: 9_000_000,
            current: "",
            previous: "",
            identity: "",
          }) + "\r\n",
        );
      if (c.script?.includes("--join-only")) return enrolled;
      if (c.script?.includes("install-agent.ps1"))
        return ok("installed and started scheduled task 'Clankie Fleet agent' for PC\\ann\r\n");
      return undefined;
    });

  it("detects Windows when uname fails and PowerShell names Win32NT; an unknown OS is refused by name", async () => {
    expect(await detectOs(win().session)).toBe("Windows");
    const bsd = scriptedHost((c) => (c.command === "uname -s" ? ok("FreeBSD\n") : undefined));
    await expect(detectOs(bsd.session)).rejects.toThrow(/runs FreeBSD; fleet deploy knows Linux, macOS and Windows/);
  });

  it("every command is one encoded PowerShell script within cmd.exe's limit; the token travels on stdin only", async () => {
    const host = win();
    const report = await runDeploy(host.session);
    expect(report).toMatchObject({
      os: "Windows",
      service: "scheduled-task",
      release: "0.1.0-abcdef123456",
      identityKept: false,
    });
    const scripted = host.calls.slice(2);
    expect(scripted.length).toBeGreaterThanOrEqual(5);
    for (const c of scripted) {
      expect(c.command).toMatch(
        /^powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand [A-Za-z0-9+/=]+$/,
      );
      expect(c.command.length).toBeLessThanOrEqual(CMD_MAX);
      expect(c.script).toBeDefined();
      for (const [open, close] of [
        ["(", ")"],
        ["{", "}"],
      ] as const)
        expect(c.script!.split(open).length, c.script).toBe(c.script!.split(close).length);
    }
    for (const c of host.calls) expect(c.command + (c.script ?? "")).not.toContain(TOKEN);
    const enroll = host.calls.find((c) => c.script?.includes("--join-only"))!;
    expect(enroll.stdin).toBe(`${TOKEN}\n`);
    expect(enroll.script).toContain("$token = [Console]::In.ReadLine()");
    expect(host.uploads).toEqual([`/C:/Users/Ann Ö/AppData/Local/clankie-agent/releases/0.1.0-abcdef123456.tgz`]);
  });

  it("writes the rendered task scripts over SFTP; the task runs node on the current junction's main.js with the agent's exact argv", async () => {
    const host = win();
    await runDeploy(host.session);
    const install = host.files.get(`/C:/Users/Ann Ö/AppData/Local/clankie-agent/install-agent.ps1`)!;
    expect(host.files.has(`/C:/Users/Ann Ö/AppData/Local/clankie-agent/uninstall-agent.ps1`)).toBe(true);
    expect(install.startsWith("\uFEFF")).toBe(true);
    expect(install).toContain(`-Execute '${NODE}'`);
    const line = /-Argument '((?:[^']|'')*)'/.exec(install)![1]!.replace(/''/g, "'");
    expect(splitWindowsCommandLine(`node.exe ${line}`).slice(1)).toEqual([
      `${DIR}\\current\\dist\\cli\\main.js`,
      "agent",
      "--state-dir",
      `${DIR}\\state`,
      "--log-level",
      "info",
    ]);
    // The junction is repointed after the task is stopped, and before the install script starts it again.
    const i = (s: string) => host.calls.findIndex((c) => c.script?.includes(s));
    const activate = host.calls[i("-ItemType Junction")]!.script!;
    expect(activate.indexOf("Stop-ScheduledTask")).toBeLessThan(activate.indexOf("Point 'current'"));
    expect(activate).toContain(`Point 'current' '${DIR}\\releases\\0.1.0-abcdef123456'`);
    expect(activate).not.toMatch(/Remove-Item/);
    expect(i("-ItemType Junction")).toBeLessThan(i("install-agent.ps1"));
  });
});
