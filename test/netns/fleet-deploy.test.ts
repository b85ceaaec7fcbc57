/**
 * Separate hosts (issue 10): a controller namespace and two agent-host namespaces whose
 * firewalls drop every inbound connection except SSH. `clankie fleet deploy` installs and
 * enrolls both agents over real OpenSSH; a lead then delivers to a mailbox seat on each; a
 * second deploy upgrades and keeps the identity; --rollback returns to the previous
 * release; a changed host key is refused. Proves agents need no inbound port.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, assertBuilt } from "../kit/cli.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import {
  CONTROLLER_IP,
  CONTROLLER_NS,
  inNs,
  removeDir,
  setupAgentHost,
  setupController,
  teardown,
  type AgentHost,
} from "./hosts.js";

const run = (ns: string, args: string[], timeoutMs = 240_000) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const c = spawn("ip", ["netns", "exec", ns, process.execPath, CLI, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    c.stdout.on("data", (d: Buffer) => (stdout += d));
    c.stderr.on("data", (d: Buffer) => (stderr += d));
    const t = setTimeout(() => c.kill("SIGKILL"), timeoutMs);
    c.once("exit", (code) => {
      clearTimeout(t);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });

describe("fleet deploy across network namespaces", () => {
  let dir: string;
  let hosts: AgentHost[] = [];
  let controller: ChildProcess;
  let url: string;
  let agentUrl: string;
  let stateDir: string;
  let key: string;
  let knownHosts: string;
  let lead: LeadClient;
  let owner: ReturnType<typeof ownerOf>;
  let ca: string;
  const remote = (i: number) => join(dir, `remote-h${i}`);
  const deploy = (i: number, extra: string[] = []) =>
    run(CONTROLLER_NS, [
      "fleet",
      "deploy",
      `root@10.210.${i}.2`,
      "--machine",
      `h${i}`,
      "--identity",
      key,
      "--known-hosts",
      knownHosts,
      "--remote-dir",
      remote(i),
      "--state-dir",
      stateDir,
      "--controller",
      url,
      "--controller-agent-url",
      agentUrl,
      "--json",
      ...extra,
    ]);

  beforeAll(async () => {
    assertBuilt();
    dir = mkdtempSync(join(tmpdir(), "c10-netns-"));
    key = join(dir, "id_ed25519");
    knownHosts = join(dir, "known_hosts");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]);
    setupController();
    hosts = [1, 2].map((i) => setupAgentHost(i, dir, readFileSync(`${key}.pub`, "utf8")));
    stateDir = join(dir, "controller");
    controller = spawn(
      "ip",
      [
        "netns",
        "exec",
        CONTROLLER_NS,
        process.execPath,
        CLI,
        "controller",
        "--json",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--agent-port",
        "0",
        "--agent-advertise",
        CONTROLLER_IP,
        "--state-dir",
        stateDir,
        "--log-level",
        "warn",
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: controller.stdout! }).once("line", resolve);
      controller.once("exit", (c) => reject(new Error(`controller exited ${c}`)));
    });
    const ready = JSON.parse(line) as { url: string; agentUrl: string; caFile: string };
    // Off loopback every port is TLS with the fleet CA (leads and owner too).
    expect(ready.url).toMatch(/^https:/);
    url = ready.url.replace("0.0.0.0", CONTROLLER_IP);
    agentUrl = ready.agentUrl;
    ca = readFileSync(ready.caFile, "utf8");
    owner = ownerOf(url, readFileSync(join(stateDir, "owner.token"), "utf8").trim(), ca);
  });
  afterAll(async () => {
    await lead?.close().catch(() => {});
    controller?.kill("SIGTERM");
    teardown(hosts);
    if (dir) removeDir(dir);
  });

  it("the agent hosts' firewalls drop everything inbound but SSH", () => {
    // Something listens on 9999 in c10-a1; from the controller's namespace it cannot be reached.
    const listener = spawn(
      "ip",
      [
        "netns",
        "exec",
        "c10-a1",
        process.execPath,
        "-e",
        "require('net').createServer(s=>s.end('open')).listen(9999,'10.210.1.2')",
      ],
      { stdio: "ignore" },
    );
    try {
      execFileSync("sleep", ["0.5"]);
      expect(() =>
        inNs(CONTROLLER_NS, ["timeout", "3", "bash", "-c", "exec 3<>/dev/tcp/10.210.1.2/9999; cat <&3"]),
      ).toThrow();
      expect(inNs(CONTROLLER_NS, ["timeout", "3", "bash", "-c", "exec 3<>/dev/tcp/10.210.1.2/22; head -c 7 <&3"])).toBe(
        "SSH-2.0",
      );
    } finally {
      listener.kill("SIGKILL");
    }
  });

  it("off loopback the leads' and owner's port is TLS: plain HTTP gets no answer, the fleet CA verifies it", async () => {
    const plain = await fetch(url.replace(/^https:/, "http:") + "/mcp", {
      method: "POST",
      signal: AbortSignal.timeout(5000),
    }).then(
      (r) => r.status,
      () => "refused",
    );
    expect(plain).toBe("refused");
    await expect(fetch(`${url}/dashboard`, { signal: AbortSignal.timeout(5000) })).rejects.toThrow();
    const { fetchTrusting } = await import("../../bridge/trusting-fetch.js");
    expect((await fetchTrusting(ca)(`${url}/dashboard`)).status).toBe(200);
  });

  it("clankie up off loopback: its readiness line names caFile, every URL is https, and its own agent enrolled", async () => {
    const upDir = join(dir, "up");
    const up = spawn(
      "ip",
      [
        "netns",
        "exec",
        CONTROLLER_NS,
        process.execPath,
        CLI,
        "up",
        "--json",
        "--host",
        CONTROLLER_IP,
        "--port",
        "0",
        "--state-dir",
        upDir,
        "--machine",
        "upbox",
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: up.stdout! }).once("line", resolve);
        up.once("exit", (c) => reject(new Error(`up exited ${c}`)));
      });
      const ready = JSON.parse(line) as Record<string, string>;
      // `bridge` (i13): the command a lead harness starts for `clankie mcp`.
      expect(Object.keys(ready).sort()).toEqual([
        "agentUrl",
        "bridge",
        "caFile",
        "dashboardUrl",
        "mcpUrl",
        "statusUrl",
        "token",
      ]);
      for (const k of ["mcpUrl", "statusUrl", "dashboardUrl", "agentUrl"])
        expect(ready[k]).toMatch(/^https:\/\/10\.210\.0\.2:\d+/);
      const upCa = readFileSync(ready.caFile!, "utf8");
      const l = await connectLead(ready.mcpUrl!, ready.token!, upCa);
      try {
        const seats = await l.call("list_seats", {});
        expect(seats.isError).toBeFalsy();
      } finally {
        await l.close();
      }
      const m = (
        await ownerOf(ready.statusUrl!, readFileSync(join(upDir, "owner.token"), "utf8").trim(), upCa).fleet.listFleet(
          {},
        )
      ).machines;
      expect(m).toContainEqual(expect.objectContaining({ name: "upbox", status: "online" }));
    } finally {
      up.kill("SIGTERM");
    }
  });

  it("an unknown host key is refused without --accept-new, and nothing is installed", async () => {
    const r = await deploy(1);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/not in .*known_hosts; check its host key and rerun with --accept-new/);
  });

  it("deploys and enrolls both agents over SSH; a lead delivers to a mailbox seat on each", async () => {
    for (const i of [1, 2]) {
      const r = await deploy(i, ["--accept-new"]);
      expect(r.code, r.stderr + r.stdout).toBe(0);
      expect(r.stderr).toMatch(/\[1\/6\] connect and verify the host key: ok \(host key added\)/);
      expect(r.stderr).toMatch(/\[6\/6\] wait until the machine is online: ok/);
      expect(JSON.parse(r.stdout.trim().split("\n").pop()!)).toMatchObject({ machine: `h${i}`, identityKept: false });
    }
    const list = (await owner.fleet.listFleet({})).machines;
    expect(
      list
        .filter((m) => m.status === "online")
        .map((m) => m.name)
        .sort(),
    ).toEqual(["h1", "h2"]);
    lead = await connectLead(`${url}/mcp`, readFileSync(join(stateDir, "lead.token"), "utf8").trim(), ca);
    for (const i of [1, 2]) {
      await owner.owner.addSeat({ machine: `h${i}`, name: "inbox", kind: 1 });
      const res = await lead.call("message_seat", { seat: `h${i}/inbox`, message: `hello h${i}` });
      expect(res.structuredContent).toMatchObject({ outcome: "delivered" });
      expect(new MailboxStore(join(remote(i), "state", "mailboxes")).list("inbox").entries.map((e) => e.text)).toEqual([
        `hello h${i}`,
      ]);
    }
  });

  it("a second deploy upgrades in place and keeps the identity; --rollback returns to the previous release", async () => {
    const keyBefore = readFileSync(join(remote(1), "state", "identity", "key.pem"), "utf8");
    const r = await deploy(1);
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout.trim().split("\n").pop()!) as {
      release: string;
      previous: string;
      identityKept: boolean;
    };
    expect(rep.identityKept).toBe(true);
    expect(rep.previous).toBeDefined();
    expect(rep.release).not.toBe(rep.previous);
    expect(r.stderr).toMatch(/enroll \(join token over stdin\): ok \(kept \(already enrolled\)\)/);
    expect(readFileSync(join(remote(1), "state", "identity", "key.pem"), "utf8")).toBe(keyBefore);
    const again = await lead.call("message_seat", { seat: "h1/inbox", message: "after the upgrade" });
    expect(again.structuredContent).toMatchObject({ outcome: "delivered" });

    const back = await deploy(1, ["--rollback"]);
    expect(back.code, back.stderr).toBe(0);
    expect(JSON.parse(back.stdout.trim().split("\n").pop()!)).toMatchObject({
      release: rep.previous,
      identityKept: true,
    });
    const after = await lead.call("message_seat", { seat: "h1/inbox", message: "after the rollback" });
    expect(after.structuredContent).toMatchObject({ outcome: "delivered" });
  });

  it("a changed host key is always refused, even with --accept-new", async () => {
    const other = join(dir, "other_key");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", other]);
    const forged = readFileSync(`${other}.pub`, "utf8").split(" ").slice(0, 2).join(" ");
    const lines = readFileSync(knownHosts, "utf8")
      .split("\n")
      .map((l) => (l.startsWith("10.210.2.2 ") ? `10.210.2.2 ${forged}` : l));
    writeFileSync(knownHosts, lines.join("\n"));
    const r = await deploy(2, ["--accept-new"]);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/HOST KEY CHANGED for 10\.210\.2\.2/);
  });
});
