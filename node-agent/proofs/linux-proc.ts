/**
 * Pure parsers for the Linux /proc text the Linux proof provider reads: /proc/PID/stat,
 * /proc/PID/environ, /proc/net/tcp(6) and /proc/net/unix. No I/O here, so each parser is
 * tested on literal text.
 */

export interface ProcStat {
  pid: number;
  name: string;
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  ttyNr: number;
  /** Foreground process group of the controlling terminal; -1 when none. */
  tpgid: number;
  /** Field 22: clock ticks after boot. The lifetime half of a process identity. */
  startTicks: number;
}

/** Parse /proc/PID/stat. The name sits in parentheses and may itself hold spaces or ')'. */
export function parseStat(text: string): ProcStat | undefined {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const pid = Number(text.slice(0, open).trim());
  const rest = text
    .slice(close + 2)
    .trim()
    .split(" ");
  // rest[0] is field 3 (state), so field N is rest[N - 3].
  const num = (field: number) => Number(rest[field - 3]);
  const stat: ProcStat = {
    pid,
    name: text.slice(open + 1, close),
    state: rest[0] ?? "",
    ppid: num(4),
    pgrp: num(5),
    session: num(6),
    ttyNr: num(7),
    tpgid: num(8),
    startTicks: num(22),
  };
  const numbers = [stat.pid, stat.ppid, stat.pgrp, stat.session, stat.ttyNr, stat.tpgid, stat.startTicks];
  return numbers.every(Number.isInteger) && stat.state.length === 1 ? stat : undefined;
}

/** Parse NUL-separated KEY=VALUE pairs of /proc/PID/environ (the environment at exec). */
export function parseEnviron(text: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const pair of text.split("\0")) {
    const eq = pair.indexOf("=");
    if (eq > 0) env.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return env;
}

/** The device name of a tty_nr: Unix98 ptys are majors 136-143, virtual consoles major 4. */
export function ttyName(ttyNr: number): string {
  if (ttyNr === 0) return "";
  const major = (ttyNr >> 8) & 0xfff;
  const minor = ((ttyNr >> 12) & 0xfff00) | (ttyNr & 0xff);
  if (major >= 136 && major <= 143) return `/dev/pts/${(major - 136) * 256 + minor}`;
  if (major === 4 && minor < 64) return `/dev/tty${minor}`;
  if (major === 4) return `/dev/ttyS${minor - 64}`;
  return `tty_nr:${major}:${minor}`;
}

export const TCP_ESTABLISHED = 0x01;
export const TCP_CLOSE = 0x07;
export const TCP_LISTEN = 0x0a;

export interface TcpRow {
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
  state: number;
  uid: number;
  inode: number;
}

/** Kernel hex addresses are 32-bit words in host (little-endian) order. */
function hexAddress(hex: string): string | undefined {
  const words = hex.match(/.{8}/g);
  if (!words || words.length * 8 !== hex.length || (words.length !== 1 && words.length !== 4)) return undefined;
  const bytes = words.flatMap((w) => [6, 4, 2, 0].map((i) => parseInt(w.slice(i, i + 2), 16)));
  if (bytes.some(Number.isNaN)) return undefined;
  if (bytes.length === 4) return bytes.join(".");
  const isV4Mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (isV4Mapped) return `::ffff:${bytes.slice(12).join(".")}`;
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return compressV6(groups);
}

function compressV6(groups: string[]): string {
  let best = { at: -1, len: 0 };
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== "0") {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === "0") j++;
    if (j - i > best.len && j - i > 1) best = { at: i, len: j - i };
    i = j;
  }
  if (best.at < 0) return groups.join(":");
  const head = groups.slice(0, best.at).join(":");
  const tail = groups.slice(best.at + best.len).join(":");
  return `${head}::${tail}`;
}

function endpoint(text: string | undefined): { address: string; port: number } | undefined {
  const [hex, port] = (text ?? "").split(":");
  const address = hexAddress(hex ?? "");
  const p = parseInt(port ?? "", 16);
  return address !== undefined && Number.isInteger(p) ? { address, port: p } : undefined;
}

/** Parse /proc/net/tcp or tcp6; malformed rows are skipped, never guessed. */
export function parseNetTcp(text: string): TcpRow[] {
  const rows: TcpRow[] = [];
  for (const line of text.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10) continue;
    const local = endpoint(f[1]);
    const remote = endpoint(f[2]);
    const state = parseInt(f[3] ?? "", 16);
    const uid = Number(f[7]);
    const inode = Number(f[9]);
    if (!local || !remote || Number.isNaN(state) || !Number.isInteger(inode)) continue;
    rows.push({
      localAddress: local.address,
      localPort: local.port,
      remoteAddress: remote.address,
      remotePort: remote.port,
      state,
      uid,
      inode,
    });
  }
  return rows;
}

export interface UnixRow {
  inode: number;
  isListening: boolean;
  path: string;
}

/** __SO_ACCEPTCON: the socket is listening for connections. */
const SO_ACCEPTCON = 0x10000;

/** Parse /proc/net/unix: "Num RefCount Protocol Flags Type St Inode Path". */
export function parseNetUnix(text: string): UnixRow[] {
  const rows: UnixRow[] = [];
  for (const line of text.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 7) continue;
    const flags = parseInt(f[3] ?? "", 16);
    const inode = Number(f[6]);
    if (Number.isNaN(flags) || !Number.isInteger(inode)) continue;
    rows.push({ inode, isListening: (flags & SO_ACCEPTCON) !== 0, path: f.slice(7).join(" ") });
  }
  return rows;
}

/** "socket:[12345]" → 12345, anything else → undefined. */
export function socketInode(link: string): number | undefined {
  const m = /^socket:\[(\d+)\]$/.exec(link);
  return m ? Number(m[1]) : undefined;
}

export interface UnixPair {
  inode: number;
  /** The socket's own name: the listening path for a socket accepted on it, "" when unnamed. */
  path: string;
  peerInode: number;
}

/**
 * Parse `ss -xHn` (iproute2; the kernel's sock_diag, which alone names a unix socket's peer):
 * "Netid State Recv-Q Send-Q Local-Address Local-Inode Peer-Address Peer-Inode", the local
 * address possibly holding spaces. Rows without a peer (listeners) or malformed are skipped.
 */
export function parseSsUnix(text: string): UnixPair[] {
  const pairs: UnixPair[] = [];
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8 || !f[0]!.startsWith("u_")) continue;
    const peerInode = Number(f[f.length - 1]);
    const inode = Number(f[f.length - 3]);
    const local = f.slice(4, f.length - 3).join(" ");
    if (!Number.isInteger(inode) || !Number.isInteger(peerInode) || inode <= 0 || peerInode <= 0) continue;
    pairs.push({ inode, path: local === "*" ? "" : local, peerInode });
  }
  return pairs;
}
