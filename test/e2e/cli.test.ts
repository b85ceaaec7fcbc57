/**
 * The CLI as a user meets it (real processes, the compiled `clankie`): --version, a help page
 * per command that documents every flag, documented exit codes, typed errors with the right
 * label and one prefix (a port in use is address_in_use, a second settle receipt_conflict,
 * never internal, never "not_found: not_found:"), `clankie up` printing commands the user's
 * shell can run, and `up` finding the pane host by itself: Herdr's socket, a tmux server, or none.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childPids, CLI, runCli, startUp, type UpProcess } from "../kit/cli.js";
import { startFakeHerdr } from "../kit/fake-herdr.js";
import { seedPglite } from "../kit/test-db.js";

const PKG = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
const EMBEDDED = { DATABASE_URL: "" };

/** Starts `clankie up` without --json and returns its human output once "Stop with Ctrl-C." is printed. */
async function upHuman(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ text: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [CLI, "up", ...args], {
    env: { ...process.env, ...env },
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const lines: string[] = [];
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout }).on("line", (l) => {
      lines.push(l);
      if (l.startsWith("Stop with Ctrl-C.")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`up exited ${code}: ${stderr}`)));
  });
  return {
    text: lines.join("\n"),
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

describe("the clankie CLI", () => {
  let dirs: string[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), "c14-cli-"));
    dirs.push(d);
    return d;
  };
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    dirs = [];
  });

  it("--version prints the package's version; no arguments is a usage error (2) with the help", async () => {
    const v = await runCli(["--version"]);
    expect(v).toMatchObject({ code: 0, stdout: `${PKG.version}\n` });
    const none = await runCli([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("Usage: clankie");
  });

  it("every command has its own help page that documents its flags, the global flags and the exit codes", async () => {
    const top = await runCli(["--help"]);
    expect(top.code).toBe(0);
    for (const flag of ["--json", "--state-dir", "--log-level", "--controller", "--version"])
      expect(top.stdout).toContain(flag);
    expect(top.stdout).toMatch(/Exit codes:\n\s+0 .*\n\s+1 .*\n\s+2 .*\n\s+3 .*\n\s+4 /);
    const pages = new Map<string, string>();
    for (const cmd of [
      ["up"],
      ["controller"],
      ["agent"],
      ["seat", "add"],
      ["seat", "list"],
      ["mailbox", "read"],
      ["mailbox", "mcp"],
      ["worker"],
      ["seat-delivery", "list"],
      ["seat-delivery", "settle"],
      ["hire-receipt", "list"],
      ["hire-receipt", "settle"],
      ["lead", "token"],
      ["lead", "revoke"],
      ["fleet", "enroll"],
      ["fleet", "list"],
      ["fleet", "revoke"],
      ["fleet", "deploy"],
      ["peers"],
      ["mcp"],
      ["doctor"],
      ["seat", "rm"],
      ["fleet", "remove"],
      ["receipts", "list"],
      ["receipts", "show"],
      ["completion"],
    ]) {
      const res = await runCli([...cmd, "--help"]);
      expect(res.code, cmd.join(" ")).toBe(0);
      expect(res.stdout, cmd.join(" ")).toContain(`Usage: clankie ${cmd.join(" ")}`);
      expect(res.stdout, cmd.join(" ")).toContain("--log-level");
      pages.set(cmd.join(" "), res.stdout);
    }
    expect(new Set(pages.values()).size).toBe(pages.size);
    for (const flag of [
      "--host",
      "--database-url",
      "--port",
      "--deliver-timeout-ms",
      "--pane-host",
      "--herdr-socket",
      "--tmux-socket",
      "--machine",
    ])
      expect(pages.get("up"), flag).toContain(flag);
    expect(pages.get("up")).toContain("(env: DATABASE_URL)");
    expect(pages.get("controller")).toContain("--database-url");
    // The fleet token is gone (ADR 0020): an agent joins once with a join token.
    for (const flag of ["--join", "--join-only"]) expect(pages.get("agent"), flag).toContain(flag);
    expect(pages.get("agent")).not.toContain("--fleet-token-file");
    for (const flag of ["--agent-host", "--agent-port", "--agent-advertise"])
      expect(pages.get("controller"), flag).toContain(flag);
    expect(pages.get("fleet enroll")).toContain("--ttl");
    for (const flag of [
      "--machine",
      "--identity",
      "--port",
      "--accept-new",
      "--rollback",
      "--known-hosts",
      "--remote-dir",
      "--controller-agent-url",
    ])
      expect(pages.get("fleet deploy"), flag).toContain(flag);
    expect(pages.get("agent")).not.toContain("--tethered");
    for (const flag of ["--url", "--token-file", "--conversation"]) expect(pages.get("mcp"), flag).toContain(flag);
    expect(pages.get("worker")).toContain("--agent-state-dir");
    expect(pages.get("hire-receipt settle")).toContain("--conversation");
    expect(pages.get("lead revoke")).toContain("--conversation");
    // Issue 37: the new commands document their flags too.
    for (const flag of ["--seat", "--conversation", "--state", "--since", "--limit", "--page-token", "--unresolved"])
      expect(pages.get("receipts list"), flag).toContain(flag);
    expect(pages.get("fleet remove")).toContain("--yes");
    expect(top.stdout).toContain("-o, --output <format>");
  });

  it("usage errors exit 2 with one clankie: line; no controller exits 3 as controller_unreachable", async () => {
    const unknown = await runCli(["frobnicate"]);
    expect(unknown.code).toBe(2);
    // Issue 37 item 5: one line, the hint folded in (it was a second line).
    expect(unknown.stderr).toBe("clankie: usage: unknown command 'frobnicate' (run with --help for usage)\n");
    const badPort = await runCli(["up", "--port", "70000"]);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toMatch(/^clankie: usage: .*--port must be an integer 0-65535, got 70000/);
    const badLevel = await runCli(["doctor", "--log-level", "loud"]);
    expect(badLevel.code).toBe(2);
    const nobody = await runCli(["seat", "list", "--state-dir", tempDir()]);
    expect(nobody.code).toBe(3);
    expect(nobody.stderr).toMatch(/^clankie: controller_unreachable: no controller is running/);
    const json = await runCli(["seat", "list", "--json", "--state-dir", tempDir()]);
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: "controller_unreachable" } });
    // --json everywhere: a usage error is one JSON document on stdout too, and nothing on stderr.
    for (const args of [
      ["--json", "frobnicate"],
      ["seat", "add", "--json"],
      ["up", "--port", "x", "--json"],
    ]) {
      const usage = await runCli(args);
      expect(usage.code, args.join(" ")).toBe(2);
      expect(JSON.parse(usage.stdout)).toMatchObject({
        error: {
          code: "invalid_argument",
          message: expect.stringMatching(
            /unknown command 'frobnicate'|missing required argument 'kind'|--port must be an integer/,
          ),
        },
      });
      expect(usage.stderr).toBe("");
    }
  });

  describe("against a running clankie up", () => {
    let up: UpProcess;
    let stateDir: string;
    const cli = (...args: string[]) => runCli([...args, "--state-dir", stateDir], EMBEDDED);

    beforeAll(async () => {
      stateDir = tempDir();
      seedPglite(stateDir);
      up = await startUp(["--state-dir", stateDir, "--port", "0", "--machine", "cli", "--pane-host", "none"], EMBEDDED);
    });
    afterAll(async () => {
      await up?.stop();
    });

    it("a port in use is address_in_use (exit 1), not internal", async () => {
      const port = new URL(up.ready.statusUrl).port;
      const other = tempDir();
      seedPglite(other);
      const res = await runCli(["controller", "--state-dir", other, "--port", port, "--log-level", "error"], EMBEDDED);
      expect(res.code).toBe(1);
      expect(res.stderr.trim()).toMatch(
        new RegExp(
          `^clankie: address_in_use: the port 127\\.0\\.0\\.1:${port} is taken by another process .*choose another --port$`,
        ),
      );
    });

    it("an unknown delivery is not_found once; a bad disposition is a usage error; tables by default, JSON with --json", async () => {
      const missing = await cli("seat-delivery", "settle", "00000000-0000-4000-8000-000000000000", "abandoned-unknown");
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/^clankie: not_found: refused: no delivery/);
      expect(missing.stderr).not.toMatch(/not_found: not_found/);
      const bad = await cli("seat-delivery", "settle", "00000000-0000-4000-8000-000000000000", "delivered");
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/^clankie: invalid_argument: /);
      // Empty states say what to do next (issue 14); headers stay one word per column.
      expect((await cli("seat", "list")).stdout).toMatch(
        /^no seats yet: add a mailbox with `clankie seat add mailbox NAME`, or open Codex, Claude Code, OpenCode or Pi in a tmux or Herdr pane/,
      );
      expect((await cli("fleet", "list")).stdout.split("\n")[0]).toMatch(
        /^MACHINE\s+STATUS\s+AGENT_VERSION\s+PLATFORM\s+CERT_EXPIRES\s+LAST_SEEN$/,
      );
      expect((await cli("seat", "add", "mailbox", "inbox")).code).toBe(0);
      const table = await cli("seat", "list");
      expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+KIND\s+STATUS\s+ONLINE\s+MODES\s+UNRESOLVED\s+CANNOT_WORK$/);
      // Issue 35 item 1: the modes column is exactly list_seats's deliveryModes; a mailbox reports
      // none, so it shows none (it used to show a guessed "send").
      expect(table.stdout).toMatch(/cli\/inbox\s+mailbox\s+idle\s+true\s+none\s+0/);
      expect(JSON.parse((await cli("seat", "list", "--json")).stdout).seats[0].modes).toBe("none");
      // --json before or after the command.
      expect(
        JSON.parse((await runCli(["--json", "seat", "list", "--state-dir", stateDir], EMBEDDED)).stdout).seats,
      ).toHaveLength(1);
      expect(JSON.parse((await cli("seat", "list", "--json")).stdout).seats).toHaveLength(1);
    });

    it("doctor with a wrong owner token says the token was refused (exit 4), not that the port does not answer", async () => {
      const other = tempDir();
      writeFileSync(join(other, "owner.token"), "owner_not-this-controllers\n", { mode: 0o600 });
      const res = await runCli(["doctor", "--state-dir", other, "--controller", up.ready.statusUrl], EMBEDDED);
      expect(res.code).toBe(4);
      expect(res.stdout).toMatch(/^ok {4}port: the controller answers at /m);
      expect(res.stdout).toMatch(
        /^FAIL {2}owner token: the controller answers but refused the owner token in .*owner\.token/m,
      );
      expect(res.stdout).not.toMatch(/does not answer/);
    });

    it("a second settle of the same delivery is receipt_conflict, not internal", async () => {
      const { connectLead } = await import("../kit/mcp-client.js");
      const { childPids } = await import("../kit/cli.js");
      const lead = await connectLead(up.ready.mcpUrl, up.ready.token);
      const agent = childPids(up.child.pid!)[0]!;
      process.kill(agent, "SIGSTOP");
      let id: string;
      try {
        // The agent is frozen: after the 20 s deliver timeout the answer is uncertain. Settle it instead of waiting.
        const pending = lead.call("message_seat", { seat: "inbox", message: "settle me twice" });
        const { readToken } = await import("../../controller/state-dir.js");
        const { ownerOf } = await import("../kit/owner.js");
        const owner = ownerOf(up.ready.statusUrl, readToken(stateDir, "owner")!);
        let row;
        for (let i = 0; i < 100 && !row; i++) {
          row = (await owner.receipts()).find((r) => r.state === "dispatching");
          if (!row) await new Promise((r) => setTimeout(r, 50));
        }
        id = row!.deliveryId;
        process.kill(agent, "SIGCONT");
        await pending;
      } finally {
        process.kill(agent, "SIGCONT");
        await lead.close();
      }
      // Delivered after the thaw, or uncertain: either way the second settle is refused with the same label.
      const first = await cli("seat-delivery", "settle", id, "abandoned-unknown");
      const second = await cli("seat-delivery", "settle", id, "abandoned-unknown");
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/^clankie: receipt_conflict: refused: delivery .* is already /);
      expect(first.stderr + second.stderr).not.toMatch(/internal|receipt_conflict: receipt_conflict/);
    });
  });

  it("npm start's output names a command the shell can run: npx clankie inside the package, the full path outside", async () => {
    const root = new URL("../../", import.meta.url).pathname;
    // One state dir for both runs: the embedded database is initialised once.
    const state = tempDir();
    seedPglite(state);
    const inside = await upHuman(
      ["--state-dir", state, "--port", "0", "--pane-host", "none"],
      { ...EMBEDDED, PATH: "/usr/bin:/bin" },
      root,
    );
    await inside.stop();
    expect(inside.text).toMatch(/Try it:\s+npx clankie seat add mailbox inbox/);
    const outside = await upHuman(
      ["--state-dir", state, "--port", "0", "--pane-host", "none"],
      { ...EMBEDDED, PATH: "/usr/bin:/bin" },
      tempDir(),
    );
    await outside.stop();
    expect(outside.text).toContain(`Try it:  node ${CLI} seat add mailbox inbox`);
    for (const text of [inside.text, outside.text]) {
      expect(text.replace(/npx clankie|node \S+main\.js/g, "")).not.toMatch(/clankie (seat|mailbox)/);
      expect(text).toMatch(
        /Claude Code \(HTTP\): +claude mcp add --transport http --scope user clankie http:\/\/127\.0\.0\.1:\d+\/mcp --header "Authorization: Bearer lead_/,
      );
      // The primary lines start the stdio bridge: no token on their command lines.
      expect(text).toMatch(/Claude Code: +claude mcp add --scope user clankie -- \S+ \S+main\.js mcp/);
      expect(text).toMatch(
        /Codex: +codex mcp remove clankie .*command = %s\\nargs = \[%s\]\\nrequired = true.*"\S+main\.js", "mcp"/,
      );
      for (const l of text.split("\n").filter((l) => /^ +(Claude Code|Codex): /.test(l)))
        expect(l).not.toContain("lead_");
      expect(text).toContain("/metrics");
    }
  });

  it("on a terminal, a first start shows progress while the database initialises and the agent registers; piped, nothing extra", async () => {
    // script(1) gives the CLI a real pseudo-terminal; a fresh state dir makes this a first start.
    const state = tempDir();
    const child = spawn(
      "/usr/bin/script",
      ["-qfec", `${process.execPath} ${CLI} up --state-dir ${state} --port 0 --pane-host none`, "/dev/null"],
      { env: { ...process.env, ...EMBEDDED }, stdio: ["pipe", "pipe", "pipe"] },
    );
    let out = "";
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("Stop with Ctrl-C.")) resolve();
      });
      child.once("exit", (code) => reject(new Error(`up exited ${code}: ${out}`)));
    });
    // Stop the whole tree this test started: script, its shell, and clankie up (which stops its agent).
    const tree = (pid: number): number[] => childPids(pid).flatMap((c) => [c, ...tree(c)]);
    for (const pid of tree(child.pid!)) {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
    await new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once("exit", () => resolve())));
    expect(out).toContain("… opening the journal (the first start initialises the embedded database");
    expect(out).toContain("… starting the local agent and waiting for it to register");
    // Piped (every other test here), stderr carries no progress.
    const piped = await runCli(["seat", "list", "--state-dir", tempDir()]);
    expect(piped.stderr).not.toContain("…");
  });

  it("up finds the pane host by itself: a tmux server on --tmux-socket, Herdr's socket, or none", async () => {
    const dir = tempDir();
    const sock = join(dir, "tmux.sock");
    const state = tempDir();
    seedPglite(state);
    const none = await upHuman(
      ["--state-dir", state, "--port", "0", "--tmux-socket", sock, "--herdr-socket", join(dir, "no-herdr.sock")],
      EMBEDDED,
      dir,
    );
    await none.stop();
    expect(none.text).toMatch(/panes: none \(no Herdr socket and no tmux server/);
    execFileSync("tmux", ["-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "c14", "/bin/sleep", "300"]);
    try {
      const tmux = await upHuman(
        ["--state-dir", state, "--port", "0", "--tmux-socket", sock, "--herdr-socket", join(dir, "no-herdr.sock")],
        EMBEDDED,
        dir,
      );
      await tmux.stop();
      expect(tmux.text).toContain(`panes: tmux (a tmux server answers on ${sock})`);
    } finally {
      execFileSync("tmux", ["-S", sock, "kill-server"]);
    }
    const herdr = await startFakeHerdr();
    try {
      const found = await upHuman(
        ["--state-dir", state, "--port", "0", "--tmux-socket", sock, "--herdr-socket", herdr.socketPath],
        EMBEDDED,
        dir,
      );
      await found.stop();
      expect(found.text).toContain(`panes: herdr (Herdr's socket exists at ${herdr.socketPath})`);
      // The agent really talks to it: it asked Herdr for its panes.
      expect(herdr.calls.length).toBeGreaterThan(0);
    } finally {
      await herdr.close();
    }
  });
});
