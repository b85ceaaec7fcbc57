/**
 * The high-availability recipe's hosts (issue 34, docs/high-availability.md): one network namespace per
 * host, all on one switch (a Linux bridge in its own namespace), prefix c34-. The test process joins the
 * switch as 10.234.0.1, as a lead's machine would. A host can be cut from chosen peers with nftables
 * (`partition`) and joined again (`heal`). Everything made here is removed by `teardown`.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chownSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { removeNamespaces } from "./hosts.js";

const SWITCH = "c34-sw";
const BRIDGE = "br34";
export const LEAD_IP = "10.234.0.1";

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"] }).toString();
export const inHost = (ns: string, args: string[]) => sh("ip", ["netns", "exec", ns, ...args]);

export interface Host {
  name: string;
  ns: string;
  ip: string;
}

/** The switch, and the test process's own port on it. */
export function setupSwitch(): void {
  sh("ip", ["netns", "add", SWITCH]);
  inHost(SWITCH, ["ip", "link", "add", BRIDGE, "type", "bridge"]);
  inHost(SWITCH, ["ip", "link", "set", BRIDGE, "up"]);
  sh("ip", ["link", "add", "c34-root", "type", "veth", "peer", "name", "c34-rootp"]);
  sh("ip", ["link", "set", "c34-rootp", "netns", SWITCH]);
  inHost(SWITCH, ["ip", "link", "set", "c34-rootp", "master", BRIDGE, "up"]);
  sh("ip", ["addr", "add", `${LEAD_IP}/24`, "dev", "c34-root"]);
  sh("ip", ["link", "set", "c34-root", "up"]);
}

/** A host named `name` (at most 8 characters) at 10.234.0.`octet`. */
export function addHost(name: string, octet: number): Host {
  const ns = `c34-${name}`;
  const ip = `10.234.0.${octet}`;
  const port = `c34-${name}`;
  sh("ip", ["netns", "add", ns]);
  inHost(ns, ["ip", "link", "set", "lo", "up"]);
  sh("ip", ["link", "add", port, "netns", SWITCH, "type", "veth", "peer", "name", "eth0", "netns", ns]);
  inHost(SWITCH, ["ip", "link", "set", port, "master", BRIDGE, "up"]);
  inHost(ns, ["ip", "addr", "add", `${ip}/24`, "dev", "eth0"]);
  inHost(ns, ["ip", "link", "set", "eth0", "up"]);
  return { name, ns, ip };
}

/** `host` drops every packet to and from `peers` (its connections to them hang, as across a cut cable). */
export function partition(host: Host, peers: string[], dir: string): void {
  const rules = join(dir, `${host.ns}-partition.nft`);
  const set = peers.join(", ");
  writeFileSync(
    rules,
    `table inet c34_partition {\n  chain input {\n    type filter hook input priority 0; policy accept;\n    ip saddr { ${set} } drop\n  }\n  chain output {\n    type filter hook output priority 0; policy accept;\n    ip daddr { ${set} } drop\n  }\n}\n`,
  );
  inHost(host.ns, ["nft", "-f", rules]);
}

export function heal(host: Host): void {
  try {
    inHost(host.ns, ["nft", "delete", "table", "inet", "c34_partition"]);
  } catch {
    // no partition
  }
}

/** A process in `host`, its stdout piped (readiness lines), stderr to `log` when given. */
export function runIn(host: Host, argv: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn("ip", ["netns", "exec", host.ns, "env", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...argv], {
    stdio: ["ignore", "pipe", "pipe"],
  });
}

const PG_BIN = "/usr/lib/postgresql/15/bin";

/** A PostgreSQL data directory owned by the postgres user, made by initdb (trust auth, replication allowed). */
export function initPrimary(dir: string): string {
  const data = join(dir, "pg-primary");
  mkdirSync(data, { recursive: true });
  chownSync(dir, uidOf("postgres"), gidOf("postgres"));
  chownSync(data, uidOf("postgres"), gidOf("postgres"));
  sh("runuser", ["-u", "postgres", "--", `${PG_BIN}/initdb`, "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  writeFileSync(
    join(data, "pg_hba.conf"),
    "local all all trust\nhost all all 10.234.0.0/24 trust\nhost replication all 10.234.0.0/24 trust\n",
  );
  return data;
}

/** A streaming standby of the primary at `primaryIp`, made by pg_basebackup -R (run from the standby's host). */
export function baseBackup(host: Host, dir: string, primaryIp: string): string {
  const data = join(dir, "pg-standby");
  inHost(host.ns, [
    "runuser",
    "-u",
    "postgres",
    "--",
    `${PG_BIN}/pg_basebackup`,
    "-h",
    primaryIp,
    "-U",
    "postgres",
    "-D",
    data,
    "-R",
    "-X",
    "stream",
    "--no-sync",
  ]);
  return data;
}

/** postgres in `host`, listening on its address only; SIGKILL it to crash the server. */
export function startPostgres(host: Host, data: string): ChildProcess {
  return spawn(
    "ip",
    [
      "netns",
      "exec",
      host.ns,
      "runuser",
      "-u",
      "postgres",
      "--",
      `${PG_BIN}/postgres`,
      "-D",
      data,
      "-c",
      `listen_addresses=${host.ip}`,
      "-c",
      "unix_socket_directories=",
      "-c",
      "fsync=off",
      "-c",
      "wal_level=replica",
      "-c",
      "max_wal_senders=4",
      "-c",
      "hot_standby=on",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
}

export function promote(host: Host, data: string): void {
  inHost(host.ns, ["runuser", "-u", "postgres", "--", `${PG_BIN}/pg_ctl`, "promote", "-D", data, "-w"]);
}

export async function waitForPostgres(host: Host, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      inHost(host.ns, [`${PG_BIN}/pg_isready`, "-q", "-h", host.ip, "-p", "5432"]);
      return;
    } catch (e) {
      if (Date.now() > until) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** HAProxy in `host`: TCP pass-through (TLS ends at the replicas, agents keep their client certificates). */
export function startHaproxy(
  host: Host,
  dir: string,
  routes: { port: number; backends: { name: string; ip: string; port: number; readyz: boolean }[] }[],
): ChildProcess {
  const cfg = join(dir, "haproxy.cfg");
  const lines = [
    "global",
    "  maxconn 4096",
    "defaults",
    "  mode tcp",
    "  timeout connect 2s",
    "  timeout client 1h",
    "  timeout server 1h",
    "  timeout check 1s",
  ];
  for (const r of routes) {
    lines.push(
      `frontend f${r.port}`,
      `  bind ${host.ip}:${r.port}`,
      `  default_backend b${r.port}`,
      `backend b${r.port}`,
      "  balance roundrobin",
    );
    // The leads' port answers /readyz over TLS: a replica whose journal is gone leaves the rotation.
    if (r.backends.some((b) => b.readyz)) lines.push("  option httpchk GET /readyz", "  http-check expect status 200");
    for (const b of r.backends)
      lines.push(
        `  server ${b.name} ${b.ip}:${b.port} check inter 500ms fall 2 rise 2${b.readyz ? " check-ssl verify none" : ""} on-marked-down shutdown-sessions`,
      );
  }
  writeFileSync(cfg, `${lines.join("\n")}\n`);
  return spawn("ip", ["netns", "exec", host.ns, "/usr/sbin/haproxy", "-db", "-f", cfg], {
    stdio: ["ignore", "ignore", "pipe"],
  });
}

export function teardown(hosts: Host[], children: ChildProcess[]): void {
  for (const c of children) c.kill("SIGKILL");
  removeNamespaces([...hosts.map((h) => h.ns), SWITCH], "c34-root");
}

function uidOf(user: string): number {
  return Number(sh("id", ["-u", user]).trim());
}

function gidOf(user: string): number {
  return Number(sh("id", ["-g", user]).trim());
}
