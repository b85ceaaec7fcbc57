/**
 * `fleet deploy` on Windows, over Windows' own OpenSSH. Every command is one PowerShell script
 * passed as -EncodedCommand (UTF-16LE base64), so it means the same whether the target's SSH
 * shell is cmd.exe or PowerShell, and no value is re-quoted by a shell. Files go over SFTP.
 * Releases sit under %LOCALAPPDATA%\clankie-agent\releases; `current` and `previous` are
 * directory junctions (no administrator right needed, unlike symbolic links); the agent runs
 * as a Scheduled Task at the user's logon (deploy/windows/install-agent.ps1).
 */
import { renderAgentService } from "../../shared/service-install/render.js";
import { powershellSingleQuoted } from "../../shared/service-install/quote.js";
import type { AgentBundle } from "./agent-bundle.js";
import type { SshSession } from "./ssh-session.js";
import { must, type DeployTarget, type TargetFacts } from "./target.js";

export const WINDOWS_TASK = "Clankie Fleet agent";
/** cmd.exe's longest command line; every encoded script must fit in it. */
export const CMD_MAX = 8191;

/** A PowerShell single-quoted literal. */
export const ps = (s: string): string => `'${powershellSingleQuoted(s)}'`;

/** The command line that runs `script` in Windows PowerShell, whatever the SSH shell is. */
export function encodedPowerShell(script: string): string {
  return `powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand ${Buffer.from(script, "utf16le").toString("base64")}`;
}

/** Windows OpenSSH's SFTP names C:\x\y as /C:/x/y. */
export const sftpPath = (p: string): string => `/${p.replace(/\\/g, "/")}`;

const STRICT = ["$ErrorActionPreference = 'Stop'", "$ProgressPreference = 'SilentlyContinue'"];

/** Where a junction in the install dir points ('' when there is none). */
const LINK_TARGET =
  "function LinkTarget($name) { $i = Get-Item -LiteralPath (Join-Path $dir $name) -Force -ErrorAction SilentlyContinue; if ($i -and $i.Target) { @($i.Target)[0] } else { '' } }";

export function inspectScript(remoteDir: string | undefined): string {
  return [
    ...STRICT,
    "$node = (Get-Command node.exe -ErrorAction SilentlyContinue | Select-Object -First 1).Source",
    `if (-not $node -and (Test-Path "$env:ProgramFiles\\nodejs\\node.exe")) { $node = "$env:ProgramFiles\\nodejs\\node.exe" }`,
    "$version = if ($node) { [string](& $node --version) } else { '' }",
    `$dir = ${remoteDir ? ps(remoteDir) : "Join-Path $env:LOCALAPPDATA 'clankie-agent'"}`,
    "New-Item -ItemType Directory -Force -Path (Join-Path $dir 'releases'), (Join-Path $dir 'state') | Out-Null",
    "$dir = (Resolve-Path -LiteralPath $dir).ProviderPath",
    "$free = (Get-PSDrive -Name $dir.Substring(0, 1)).Free",
    LINK_TARGET,
    "$idFile = Join-Path $dir 'state\\identity\\identity.json'",
    "$identity = if (Test-Path -LiteralPath $idFile) { Get-Content -Raw -LiteralPath $idFile } else { '' }",
    "[pscustomobject]@{ node = [string]$node; version = $version; dir = $dir; freeKb = [int64]($free / 1024); current = (LinkTarget 'current'); previous = (LinkTarget 'previous'); identity = $identity } | ConvertTo-Json -Compress",
  ].join("\n");
}

export function unpackScript(node: string, rel: string): string {
  return [
    ...STRICT,
    `$rel = ${ps(rel)}`,
    "New-Item -ItemType Directory -Force -Path $rel | Out-Null",
    // tar.exe (bsdtar) ships with Windows 10 1803 and later.
    'tar.exe -xzf "$rel.tgz" -C $rel',
    'if ($LASTEXITCODE -ne 0) { throw "tar.exe exit $LASTEXITCODE" }',
    'Remove-Item -Force -LiteralPath "$rel.tgz"',
    `& ${ps(node)} (Join-Path $rel 'dist\\cli\\main.js') --help | Out-Null`,
    'if ($LASTEXITCODE -ne 0) { throw "the copied agent does not start (exit $LASTEXITCODE)" }',
  ].join("\n");
}

/** The token is read from this script's stdin and piped to the agent's: never on a command line. */
export function enrollScript(node: string, release: string, dir: string, agentUrl: string, machine: string): string {
  return [
    "$ErrorActionPreference = 'Stop'",
    "$token = [Console]::In.ReadLine()",
    `$token | & ${ps(node)} ${ps(`${release}\\dist\\cli\\main.js`)} agent --join-only --join - --json --controller ${ps(agentUrl)} --state-dir ${ps(`${dir}\\state`)} --machine ${ps(machine)}`,
    "exit $LASTEXITCODE",
  ].join("\n");
}

/** Stops the task (its node holds files in `current`), then repoints the junctions. */
export function activateScript(dir: string, release: string, previous: string | undefined): string {
  return [
    ...STRICT,
    `$dir = ${ps(dir)}`,
    `if (Get-ScheduledTask -TaskName ${ps(WINDOWS_TASK)} -ErrorAction SilentlyContinue) { Stop-ScheduledTask -TaskName ${ps(WINDOWS_TASK)} }`,
    // Directory.Delete on a junction removes the junction only, never the release it points at.
    "function Point($name, $target) { $p = Join-Path $dir $name; if (Get-Item -LiteralPath $p -Force -ErrorAction SilentlyContinue) { [System.IO.Directory]::Delete($p) }; New-Item -ItemType Junction -Path $p -Target $target | Out-Null }",
    ...(previous ? [`Point 'previous' ${ps(previous)}`] : []),
    `Point 'current' ${ps(release)}`,
  ].join("\n");
}

export function pruneScript(dir: string): string {
  return [
    ...STRICT,
    `$dir = ${ps(dir)}`,
    LINK_TARGET,
    "$keep = @((LinkTarget 'current'), (LinkTarget 'previous'))",
    "Get-ChildItem -LiteralPath (Join-Path $dir 'releases') -Directory | Sort-Object LastWriteTime -Descending | Select-Object -Skip 3 | Where-Object { $keep -notcontains $_.FullName } | Remove-Item -Recurse -Force",
  ].join("\n");
}

/** The Scheduled Task's install and uninstall scripts, for the release `current` points at. */
export function taskScripts(dir: string, node: string) {
  return renderAgentService("windows-task", {
    node,
    main: `${dir}\\current\\dist\\cli\\main.js`,
    agentArgs: ["--state-dir", `${dir}\\state`, "--log-level", "info"],
    stateDir: `${dir}\\state`,
    name: WINDOWS_TASK,
  });
}

export function windowsTarget(ssh: SshSession): DeployTarget {
  const run = (script: string, what: string, stdin?: string) => must(ssh, encodedPowerShell(script), what, stdin);
  return {
    os: "Windows",
    async inspect(remoteDir) {
      const out = JSON.parse((await run(inspectScript(remoteDir), "inspect the target")).split("\n").pop()!) as {
        node: string;
        version: string;
        dir: string;
        freeKb: number;
        current: string;
        previous: string;
        identity: string;
      };
      const machine = out.identity ? (JSON.parse(out.identity) as { machine?: string }).machine : undefined;
      return {
        os: "Windows",
        node: out.node,
        version: out.version.trim(),
        dir: out.dir,
        freeKb: out.freeKb,
        current: out.current || undefined,
        previous: out.previous || undefined,
        machine,
      } satisfies TargetFacts;
    },
    async unpack(f, bundle: AgentBundle) {
      const rel = `${f.dir}\\releases\\${bundle.releaseId}`;
      await ssh.upload(bundle.file, sftpPath(`${rel}.tgz`));
      await run(unpackScript(f.node, rel), "unpack the agent");
      return rel;
    },
    enroll: (f, release, agentUrl, machine, token) =>
      run(enrollScript(f.node, release, f.dir, agentUrl, machine), "enrollment refused", token + "\n"),
    async activate(f, release, previous) {
      await run(activateScript(f.dir, release, previous), "switch releases");
    },
    async restart(f) {
      for (const file of taskScripts(f.dir, f.node))
        await ssh.writeFile(sftpPath(`${f.dir}\\${file.fileName}`), file.content);
      await run(`& ${ps(`${f.dir}\\install-agent.ps1`)}`, "start the agent");
      return "scheduled-task";
    },
    async prune(f) {
      await ssh.exec(encodedPowerShell(pruneScript(f.dir)));
    },
  };
}
