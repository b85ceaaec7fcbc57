/** The /proc parsers on recorded kernel text (test/fixtures/proofs/linux, recorded on this machine plus hand-added rows). */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  parseEnviron,
  parseNetTcp,
  parseNetUnix,
  parseSsUnix,
  parseStat,
  socketInode,
  ttyName,
  TCP_ESTABLISHED,
  TCP_LISTEN,
} from "../../../../node-agent/proofs/linux-proc.js";

const fixture = (name: string) =>
  readFileSync(new URL(`../../../fixtures/proofs/linux/${name}`, import.meta.url), "utf8");

describe("linux-proc.parseStat", () => {
  it("reads pid, parent, groups, terminal and the raw start ticks (field 22) that make an identity", () => {
    const s = parseStat(
      "11201 (bash) S 11196 11201 11201 34816 11250 4194560 19374 3362750 0 87 6 24 12229 2386 20 0 1 0 124040 5365760 1050 18446744073709551615",
    );
    expect(s).toMatchObject({
      pid: 11201,
      name: "bash",
      state: "S",
      ppid: 11196,
      pgrp: 11201,
      ttyNr: 34816,
      tpgid: 11250,
      startTicks: 124040,
    });
  });
  it("a name holding spaces and parentheses cannot shift the fields", () => {
    const s = parseStat("42 (tmux: server) (x)) R 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0");
    expect(s).toMatchObject({ pid: 42, name: "tmux: server) (x)", ppid: 1, startTicks: 777 });
  });
  it("malformed text is no stat at all, never a guessed one", () => {
    expect(parseStat("")).toBeUndefined();
    expect(parseStat("42 (x) S 1 2")).toBeUndefined();
  });
});

describe("linux-proc tables", () => {
  it("reads /proc/net/tcp rows as addresses, ports, states and inodes, skipping malformed rows", () => {
    const rows = parseNetTcp(fixture("tcp.txt"));
    expect(rows).toHaveLength(7);
    expect(rows[0]).toMatchObject({ localAddress: "127.0.0.1", localPort: 0x1538, state: TCP_LISTEN, inode: 3650 });
    expect(rows[4]).toMatchObject({ localAddress: "0.0.0.0", localPort: 2024 });
    expect(rows[5]).toMatchObject({
      localAddress: "127.0.0.1",
      localPort: 0xbb9a,
      remoteAddress: "127.0.0.1",
      remotePort: 0x92f7,
      state: TCP_ESTABLISHED,
      inode: 91001,
    });
  });
  it("reads /proc/net/tcp6, including ::1 and v4-mapped loopback", () => {
    const rows = parseNetTcp(fixture("tcp6.txt"));
    expect(rows[0]).toMatchObject({ localAddress: "::1", localPort: 0x18eb, state: TCP_LISTEN });
    expect(rows[2]).toMatchObject({
      localAddress: "::ffff:127.0.0.1",
      localPort: 0x1194,
      remotePort: 0xc350,
      state: TCP_ESTABLISHED,
    });
    expect(rows[3]).toMatchObject({ localAddress: "::", localPort: 22 });
  });
  it("reads /proc/net/unix listening flags and paths, abstract names and spaces included", () => {
    const rows = parseNetUnix(fixture("unix.txt"));
    expect(rows[0]).toEqual({ inode: 3651, isListening: true, path: "/var/run/postgresql/.s.PGSQL.5432" });
    expect(rows[1]).toMatchObject({ inode: 21785, isListening: false, path: "" });
    expect(rows.at(-2)).toEqual({ inode: 91005, isListening: true, path: "@clankie-abstract" });
    expect(rows.at(-1)).toEqual({ inode: 91006, isListening: true, path: "/tmp/seat dir/with space.sock" });
  });
  it("environ, socket links and terminal numbers", () => {
    expect(parseEnviron("HOME=/root\0CODEX_HOME=/x=y\0\0")).toEqual(
      new Map([
        ["HOME", "/root"],
        ["CODEX_HOME", "/x=y"],
      ]),
    );
    expect(socketInode("socket:[91001]")).toBe(91001);
    expect(socketInode("pipe:[5]")).toBeUndefined();
    expect(ttyName(34816)).toBe("/dev/pts/0");
    expect(ttyName(34819)).toBe("/dev/pts/3");
    expect(ttyName(0)).toBe("");
  });
});

describe("linux-proc.parseSsUnix", () => {
  it("pairs each connected unix socket with its peer, keeps a path with spaces, and skips listeners and garbage", () => {
    const text = [
      "u_str ESTAB 0      0      /tmp/t.sock 154228 * 154227",
      "u_str ESTAB 0      0      * 154227 * 154228",
      "u_str ESTAB 0 0 /tmp/with space/app.sock 9 * 8",
      "u_str LISTEN 0 4096 /tmp/t.sock 154226 * 0",
      "garbage line",
      "u_dgr UNCONN 0 0 * x * 1",
    ].join("\n");
    expect(parseSsUnix(text)).toEqual([
      { inode: 154228, path: "/tmp/t.sock", peerInode: 154227 },
      { inode: 154227, path: "", peerInode: 154228 },
      { inode: 9, path: "/tmp/with space/app.sock", peerInode: 8 },
    ]);
  });
});
