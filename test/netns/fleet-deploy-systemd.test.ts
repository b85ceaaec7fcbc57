/**
 * Issue 10 item 5 (a systemd user unit on Linux), for real: an agent host whose SSH user has a
 * running systemd user manager (Debian's systemd, see hosts.ts). `clankie fleet deploy`
 * installs the unit rendered from deploy/linux/, enables and starts it with `systemctl
 * --user` over real OpenSSH; the installed file passes `systemd-analyze verify --user`; the
 * machine comes online and a lead delivers to a mailbox seat on it; systemd restarts a killed
 * agent (Restart=on-failure); a second deploy restarts the unit, keeping the identity.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readlinkSync } from "node:fs";
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

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("fleet deploy to a Linux host with a user systemd", () => {
  let dir: string;
  let host: AgentHost;
  let controller: ChildProcess;
  let url: string;
  let agentUrl: string;
  let stateDir: string;
  let key: string;
  let lead: LeadClient;
  let owner: ReturnType<typeof ownerOf>;
  let ca: string;
  const remote = () => join(dir, "remote-h3");
  const deploy = () =>
    run(CONTROLLER_NS, [
      "fleet",
      "deploy",
      "root@10.210.3.2",
      "--machine",
      "h3",
      "--identity",
      key,
      "--known-hosts",
      join(dir, "known_hosts"),
      "--accept-new",
      "--remote-dir",
      remote(),
      "--state-dir",
      stateDir,
      "--controller",
      url,
      "--controller-agent-url",
      agentUrl,
      "--json",
    ]);
  /** systemctl --user as the SSH user's session runs it: in the host's mount and network namespaces. */
  const systemctl = (...args: string[]) =>
    spawnSync(
      "nsenter",
      [
        "-t",
        String(host.sshd.pid),
        "-m",
        "-n",
        "--",
        "env",
        `XDG_RUNTIME_DIR=${host.userSystemd!.runtimeDir}`,
        "systemctl",
        "--user",
        ...args,
      ],
      { encoding: "utf8" },
    );
  const mainPid = () =>
    Number(/MainPID=(\d+)/.exec(systemctl("show", "-p", "MainPID", "clankie-agent").stdout)?.[1] ?? 0);
  const unitFile = () => join(host.userSystemd!.home, ".config", "systemd", "user", "clankie-agent.service");

  beforeAll(async () => {
    assertBuilt();
    dir = mkdtempSync(join(tmpdir(), "c14-netns-"));
    key = join(dir, "id_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]);
    setupController();
    host = setupAgentHost(3, dir, readFileSync(`${key}.pub`, "utf8"), { userSystemd: true });
    await until("the user systemd's private socket", () =>
      existsSync(join(host.userSystemd!.runtimeDir, "systemd", "private")) ? true : undefined,
    );
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
    url = ready.url.replace("0.0.0.0", CONTROLLER_IP);
    agentUrl = ready.agentUrl;
    ca = readFileSync(ready.caFile, "utf8");
    owner = ownerOf(url, readFileSync(join(stateDir, "owner.token"), "utf8").trim(), ca);
  });
  afterAll(async () => {
    await lead?.close().catch(() => {});
    controller?.kill("SIGTERM");
    if (host) teardown([host]);
    if (dir) removeDir(dir);
  });

  it("a key the host does not accept is permission_denied (not agent_unreachable), and nothing is installed", async () => {
    const other = join(dir, "other_key");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", other]);
    const r = await run(CONTROLLER_NS, [
      "fleet",
      "deploy",
      "root@10.210.3.2",
      "--machine",
      "h3",
      "--identity",
      other,
      "--known-hosts",
      join(dir, "known_hosts"),
      "--accept-new",
      "--remote-dir",
      remote(),
      "--state-dir",
      stateDir,
      "--controller",
      url,
      "--controller-agent-url",
      agentUrl,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n").pop()).toMatch(
      /^clankie: permission_denied: step 1\/6 \(connect and verify the host key\) failed: ssh root@10\.210\.3\.2:22 refused the key .*other_key .*authorized_keys there\?\. Nothing was left on 10\.210\.3\.2\.$/,
    );
    expect(existsSync(remote())).toBe(false);
  });

  it("installs the unit with systemctl --user: enabled, active, and the installed file passes systemd-analyze verify --user", async () => {
    const r = await deploy();
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(JSON.parse(r.stdout.trim().split("\n").pop()!)).toMatchObject({
      machine: "h3",
      os: "Linux",
      service: "systemd-user",
      identityKept: false,
    });
    expect(r.stderr).toMatch(/\[5\/6\] install and start the service: ok \(systemd-user\)/);
    expect(systemctl("is-enabled", "clankie-agent").stdout.trim()).toBe("enabled");
    expect(systemctl("is-active", "clankie-agent").stdout.trim()).toBe("active");
    expect(
      readlinkSync(
        join(host.userSystemd!.home, ".config", "systemd", "user", "default.target.wants", "clankie-agent.service"),
      ),
    ).toBe(unitFile().replace(host.userSystemd!.home, "/root"));
    // No supervisor script: the user systemd runs the agent.
    expect(existsSync(join(remote(), "supervisor.pid"))).toBe(false);
    const unit = readFileSync(unitFile(), "utf8");
    expect(unit).toContain(
      `ExecStart="${process.execPath}" "${remote()}/current/dist/cli/main.js" "agent" "--state-dir" "${remote()}/state"`,
    );
    const verify = spawnSync("systemd-analyze", ["verify", "--user", unitFile()], {
      env: { ...process.env, XDG_RUNTIME_DIR: mkdtempSync(join(dir, "xdg-verify-")) },
      encoding: "utf8",
    });
    expect({ status: verify.status, stderr: verify.stderr }).toEqual({ status: 0, stderr: "" });
  });

  it("the machine is online under the unit, and a lead delivers to a mailbox seat on it", async () => {
    expect((await owner.fleet.listFleet({})).machines).toContainEqual(
      expect.objectContaining({ name: "h3", status: "online" }),
    );
    lead = await connectLead(`${url}/mcp`, readFileSync(join(stateDir, "lead.token"), "utf8").trim(), ca);
    await owner.owner.addSeat({ machine: "h3", name: "inbox", kind: 1 });
    const res = await lead.call("message_seat", { seat: "h3/inbox", message: "hello from systemd" });
    expect(res.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(new MailboxStore(join(remote(), "state", "mailboxes")).list("inbox").entries.map((e) => e.text)).toEqual([
      "hello from systemd",
    ]);
  });

  it("a killed agent is restarted by systemd (Restart=on-failure) and delivers again", async () => {
    const before = mainPid();
    expect(before).toBeGreaterThan(0);
    process.kill(before, "SIGKILL");
    const after = await until("a new MainPID", () => {
      const p = mainPid();
      return p > 0 && p !== before ? p : undefined;
    });
    expect(after).not.toBe(before);
    const res = await until("a delivery after the restart", async () => {
      const r = await lead.call("message_seat", { seat: "h3/inbox", message: `after the restart ${Date.now()}` });
      return (r.structuredContent as { outcome?: string } | undefined)?.outcome === "delivered" ? r : undefined;
    });
    expect(res.structuredContent).toMatchObject({ outcome: "delivered" });
  });

  it("a second deploy restarts the unit through systemctl and keeps the identity", async () => {
    const before = mainPid();
    const keyBefore = readFileSync(join(remote(), "state", "identity", "key.pem"), "utf8");
    const r = await deploy();
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim().split("\n").pop()!)).toMatchObject({
      service: "systemd-user",
      identityKept: true,
    });
    expect(mainPid()).not.toBe(before);
    expect(systemctl("is-active", "clankie-agent").stdout.trim()).toBe("active");
    expect(readFileSync(join(remote(), "state", "identity", "key.pem"), "utf8")).toBe(keyBefore);
  });
});
