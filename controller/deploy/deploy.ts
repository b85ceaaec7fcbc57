/**
 * `clankie fleet deploy`: install (or upgrade, or roll back) a node agent over SSH, one
 * checked step at a time. The join token goes over the SSH channel's stdin, never into a
 * command line; a rerun keeps the machine's identity (its key never leaves the target).
 * A failed step stops the deploy and says what was left behind. The commands for each OS
 * (Linux, macOS, Windows) are in posix-target.ts and windows-target.ts.
 */
import { FleetError, ErrorCode } from "../../shared/errors.js";
import { rmSync } from "node:fs";
import { dirname } from "node:path";
import { buildAgentBundle, type AgentBundle } from "./agent-bundle.js";
import { openSsh, type SshSession, type SshTarget } from "./ssh-session.js";
import { checkNode, detectOs, leaf, type DeployTarget, type TargetOs } from "./target.js";
import { posixTarget } from "./posix-target.js";
import { windowsTarget } from "./windows-target.js";

export interface DeployOptions {
  target: SshTarget;
  machine: string;
  identityFile: string;
  knownHosts: string;
  acceptNew: boolean;
  rollback: boolean;
  /** Where the agent lives on the target (default ~/.clankie-agent). */
  remoteDir: string | undefined;
  /** The agent URL the target dials. */
  agentUrl: string;
  /** A fresh join token for the machine (only called when the target has no identity yet). */
  issueJoinToken: () => Promise<string>;
  /** Resolves when the machine is online with a link at least as new as `since`. */
  waitOnline: (since: number) => Promise<{ agentVersion: string }>;
  progress: (step: number, total: number, text: string, status: "start" | "ok" | "failed", detail?: string) => void;
  /** What to copy (default: this installation, agent-bundle.ts). */
  buildBundle?: () => AgentBundle;
  /** How to reach the target (default: ssh2 with the host key checked, ssh-session.ts). */
  openSession?: (
    t: SshTarget,
    o: { identityFile: string; knownHosts: string; acceptNew: boolean },
  ) => Promise<SshSession>;
}

export interface DeployReport {
  machine: string;
  host: string;
  /** The OS the target named: Linux, Darwin or Windows. */
  os: TargetOs;
  release: string;
  previous: string | undefined;
  identityKept: boolean;
  service: string;
  agentVersion: string;
  hostKey: string;
}

const MIN_FREE_KB = 300 * 1024;

/** The commands for the OS the target names (target.ts): POSIX sh on Linux and macOS, PowerShell on Windows. */
export function targetFor(ssh: SshSession, os: TargetOs): DeployTarget {
  return os === "Windows" ? windowsTarget(ssh) : posixTarget(ssh, os);
}

export async function deploy(o: DeployOptions): Promise<DeployReport> {
  const left: string[] = [];
  const steps = o.rollback
    ? [
        "connect and verify the host key",
        "check the target",
        "switch to the previous release",
        "restart the service",
        "wait until the machine is online",
      ]
    : [
        "connect and verify the host key",
        "check the target",
        "copy the agent",
        "enroll (join token over stdin)",
        "install and start the service",
        "wait until the machine is online",
      ];
  let n = 0;
  const step = async <T>(fn: () => Promise<T>, detail?: (v: T) => string): Promise<T> => {
    n++;
    o.progress(n, steps.length, steps[n - 1]!, "start");
    try {
      const v = await fn();
      o.progress(n, steps.length, steps[n - 1]!, "ok", detail?.(v));
      return v;
    } catch (e) {
      const err = FleetError.from(e);
      const leftBehind = left.length
        ? ` Left behind on ${o.target.host}: ${left.join("; ")}.`
        : ` Nothing was left on ${o.target.host}.`;
      o.progress(n, steps.length, steps[n - 1]!, "failed", err.message);
      throw new FleetError(
        err.code,
        `step ${n}/${steps.length} (${steps[n - 1]}) failed: ${err.message}.${leftBehind}`,
        { cause: e },
      );
    }
  };

  const ssh = await step(
    () =>
      (o.openSession ?? openSsh)(o.target, {
        identityFile: o.identityFile,
        knownHosts: o.knownHosts,
        acceptNew: o.acceptNew,
      }),
    (s) => `host key ${s.hostKey.kind}`,
  );
  try {
    const { target, facts } = await step(
      async () => {
        const target = targetFor(ssh, await detectOs(ssh));
        const facts = await target.inspect(o.remoteDir);
        checkNode(facts);
        if (!(facts.freeKb >= MIN_FREE_KB))
          throw new FleetError(
            ErrorCode.InvalidArgument,
            `only ${Math.round(facts.freeKb / 1024)} MB free under ${facts.dir}; ${MIN_FREE_KB / 1024} MB are needed`,
          );
        return { target, facts };
      },
      ({ facts: f }) =>
        `${f.os}, Node ${f.version}, ${Math.round(f.freeKb / 1024)} MB free, ${f.current ? `release ${leaf(f.current)} installed` : "fresh install"}`,
    );
    if (facts.machine && facts.machine !== o.machine)
      throw new FleetError(
        ErrorCode.InvalidArgument,
        `${o.target.host} already holds the identity of ${facts.machine}, not ${o.machine}; nothing was changed`,
      );

    let release: string;
    const previous = facts.current;
    if (o.rollback) {
      if (!facts.previous || !facts.current)
        throw new FleetError(ErrorCode.NotFound, `no previous release on ${o.target.host} to roll back to`);
      release = await step(
        async () => {
          await target.activate(facts, facts.previous!, facts.current);
          return facts.previous!;
        },
        (r) => `current is ${leaf(r)}`,
      );
    } else {
      release = await step(async () => {
        const bundle = (o.buildBundle ?? buildAgentBundle)();
        left.push(`the copied release ${bundle.releaseId} (not active)`);
        try {
          return await target.unpack(facts, bundle);
        } finally {
          rmSync(dirname(bundle.file), { recursive: true, force: true });
        }
      }, leaf);
      await step(
        async () => {
          if (facts.machine === o.machine) return "kept (already enrolled)";
          const out = await target.enroll(facts, release, o.agentUrl, o.machine, await o.issueJoinToken());
          left.push(`identity in ${facts.dir} (state/identity)`);
          return `new identity, certificate until ${(JSON.parse(out.split("\n").pop()!) as { notAfter: string }).notAfter}`;
        },
        (v) => v,
      );
    }
    const service = await step(
      async () => {
        if (!o.rollback) {
          await target.activate(facts, release, facts.current);
          left.push(`current → ${leaf(release)}`);
        }
        const how = await target.restart(facts);
        left.push(`the agent service (${how})`);
        await target.prune(facts);
        return how;
      },
      (s) => s,
    );
    const since = Date.now();
    const online = await step(
      () => o.waitOnline(since),
      (v) => `online, agent ${v.agentVersion}`,
    );
    return {
      machine: o.machine,
      host: o.target.host,
      os: facts.os,
      release: leaf(release),
      previous: previous ? leaf(previous) : undefined,
      identityKept: facts.machine === o.machine,
      service,
      agentVersion: online.agentVersion,
      hostKey: ssh.hostKey.kind,
    };
  } finally {
    ssh.close();
  }
}
