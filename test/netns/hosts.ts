/**
 * Separate hosts for the fleet tests: one network namespace for the controller and one per
 * agent host (prefix c10-), joined by veth pairs. Each agent host runs a real OpenSSH sshd
 * and an nftables firewall that drops every inbound connection except SSH. Everything made
 * here is removed by `teardown`.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";

export const CONTROLLER_NS = "c10-ctl";
export const ROOT_SIDE_IP = "10.210.0.1";
export const CONTROLLER_IP = "10.210.0.2";

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"] }).toString();
export const inNs = (ns: string, args: string[]) => sh("ip", ["netns", "exec", ns, ...args]);

export interface AgentHost {
  ns: string;
  ip: string;
  sshd: ChildProcess;
  /** With a user systemd: the SSH user's HOME as seen from outside, and its XDG_RUNTIME_DIR. */
  userSystemd?: { home: string; runtimeDir: string };
}

export function setupController(): void {
  sh("ip", ["netns", "add", CONTROLLER_NS]);
  inNs(CONTROLLER_NS, ["ip", "link", "set", "lo", "up"]);
  sh("ip", ["link", "add", "c10-r0", "type", "veth", "peer", "name", "c10-r0p"]);
  sh("ip", ["link", "set", "c10-r0p", "netns", CONTROLLER_NS]);
  sh("ip", ["addr", "add", `${ROOT_SIDE_IP}/24`, "dev", "c10-r0"]);
  sh("ip", ["link", "set", "c10-r0", "up"]);
  inNs(CONTROLLER_NS, ["ip", "addr", "add", `${CONTROLLER_IP}/24`, "dev", "c10-r0p"]);
  inNs(CONTROLLER_NS, ["ip", "link", "set", "c10-r0p", "up"]);
}

/**
 * Host `i` (1, 2, …): 10.210.i.2, its only route via the controller's namespace. With
 * `userSystemd`, the host also runs a real systemd user manager (Debian's /lib/systemd/systemd
 * --user) for the SSH user, as a Linux desktop or a lingering server account has: in a private
 * mount namespace that shows /run/systemd/system (systemd refuses a user instance on a system
 * not booted with it) and a HOME of the test's own over /root, so nothing of the real machine's
 * systemd or root account is touched. sshd gives its sessions that manager's XDG_RUNTIME_DIR.
 */
export function setupAgentHost(
  i: number,
  dir: string,
  authorizedKey: string,
  opts: { userSystemd?: boolean } = {},
): AgentHost {
  const ns = `c10-a${i}`;
  const ip = `10.210.${i}.2`;
  sh("ip", ["netns", "add", ns]);
  inNs(ns, ["ip", "link", "set", "lo", "up"]);
  sh("ip", ["link", "add", `c10-c${i}`, "type", "veth", "peer", "name", `c10-c${i}p`]);
  sh("ip", ["link", "set", `c10-c${i}`, "netns", CONTROLLER_NS]);
  sh("ip", ["link", "set", `c10-c${i}p`, "netns", ns]);
  inNs(CONTROLLER_NS, ["ip", "addr", "add", `10.210.${i}.1/24`, "dev", `c10-c${i}`]);
  inNs(CONTROLLER_NS, ["ip", "link", "set", `c10-c${i}`, "up"]);
  inNs(ns, ["ip", "addr", "add", `${ip}/24`, "dev", `c10-c${i}p`]);
  inNs(ns, ["ip", "link", "set", `c10-c${i}p`, "up"]);
  inNs(ns, ["ip", "route", "add", "default", "via", `10.210.${i}.1`]);
  // The agent host's firewall: nothing comes in but SSH (and replies to what it dialed).
  const rules = join(dir, `${ns}.nft`);
  writeFileSync(
    rules,
    `table inet c10_fw {\n  chain input {\n    type filter hook input priority 0; policy drop;\n    iif "lo" accept\n    ct state established,related accept\n    tcp dport 22 accept\n  }\n}\n`,
  );
  inNs(ns, ["nft", "-f", rules]);
  // A real OpenSSH sshd, its own config, host key and authorized key.
  const d = join(dir, ns);
  mkdirSync(d, { recursive: true, mode: 0o700 });
  sh("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(d, "host_key")]);
  writeFileSync(join(d, "authorized_keys"), authorizedKey, { mode: 0o600 });
  const home = join(d, "home");
  const runtimeDir = join(d, "xdg");
  writeFileSync(
    join(d, "sshd_config"),
    [
      `Port 22`,
      `ListenAddress ${ip}`,
      `HostKey ${join(d, "host_key")}`,
      `AuthorizedKeysFile ${join(d, "authorized_keys")}`,
      `PidFile ${join(d, "sshd.pid")}`,
      "PermitRootLogin prohibit-password",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "UsePAM no",
      "StrictModes no",
      "Subsystem sftp internal-sftp",
      ...(opts.userSystemd ? [`SetEnv XDG_RUNTIME_DIR=${runtimeDir}`] : []),
      "",
    ].join("\n"),
  );
  mkdirSync("/run/sshd", { recursive: true });
  const sshdArgs = ["/usr/sbin/sshd", "-D", "-e", "-f", join(d, "sshd_config")];
  if (!opts.userSystemd) {
    const sshd = spawn("ip", ["netns", "exec", ns, ...sshdArgs], { stdio: ["ignore", "ignore", "pipe"] });
    return { ns, ip, sshd };
  }
  mkdirSync(home, { mode: 0o700 });
  mkdirSync(runtimeDir, { mode: 0o700 });
  const script = [
    "set -e",
    "mount -t tmpfs tmpfs /run/systemd",
    "mkdir /run/systemd/system",
    `mount --bind '${home}' /root`,
    // nsenter --net, not `ip netns exec`: the latter remounts /sys, and systemd needs the cgroup mounts under it.
    `XDG_RUNTIME_DIR='${runtimeDir}' HOME=/root nsenter --net=/run/netns/${ns} /lib/systemd/systemd --user >'${join(d, "systemd-user.log")}' 2>&1 &`,
    `exec nsenter --net=/run/netns/${ns} ${sshdArgs.map((a) => `'${a}'`).join(" ")}`,
  ].join("\n");
  const sshd = spawn("unshare", ["-m", "--propagation", "private", "sh", "-c", script], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  return { ns, ip, sshd, userSystemd: { home, runtimeDir } };
}

export function teardown(hosts: AgentHost[]): void {
  for (const h of hosts) h.sshd.kill("SIGTERM");
  removeNamespaces([...hosts.map((h) => h.ns), CONTROLLER_NS], "c10-r0");
}

/**
 * Deletes test namespaces and the root-side veth: whatever still runs in a namespace (a deployed
 * agent's supervisor, a replica) is killed first, so nothing outlives its host.
 */
export function removeNamespaces(namespaces: string[], rootLink: string): void {
  for (const ns of namespaces) {
    try {
      for (const p of sh("ip", ["netns", "pids", ns]).split(/\s+/).filter(Boolean)) {
        try {
          process.kill(Number(p), "SIGKILL");
        } catch {
          // already gone
        }
      }
    } catch {
      // no such namespace
    }
    try {
      sh("ip", ["netns", "del", ns]);
    } catch {
      // already gone
    }
  }
  try {
    sh("ip", ["link", "del", rootLink]);
  } catch {
    // went with its namespace
  }
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
