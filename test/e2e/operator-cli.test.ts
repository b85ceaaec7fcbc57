/**
 * Issue 37 items 1, 2 and 5 as an operator meets them, with the compiled `clankie` against a real
 * `clankie up` and a second machine's agent process: fleet remove (with its confirmation) and
 * seat rm, doctor's WARN for a revoked machine, the revoked agent's log, receipts list|show with
 * filters and paging, -o json|table on every listing, bash completion in a real bash, and the
 * small untruths (doctor's help, up on busy ports).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, runCli, startUp, type UpProcess } from "../kit/cli.js";
import { connectLead } from "../kit/mcp-client.js";
import { seedPglite, tempDir } from "../kit/test-db.js";

const EMBEDDED = { DATABASE_URL: "" };

/** The CLI with `input` on its stdin (then closed): answers a confirmation, or none at all. */
function runWithInput(args: string[], input: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...EMBEDDED },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(input);
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code: code ?? 1, stdout, stderr })));
}

const json = (text: string) => JSON.parse(text) as Record<string, unknown>;

describe("issue 37: the operator's CLI", () => {
  it("item 5: doctor --help states the exit codes doctor returns (3 with no controller), and doctor does exit 3", async () => {
    const help = await runCli(["doctor", "--help"]);
    expect(help.stdout).toMatch(/Exit codes of doctor:\n\s+0 .*\n\s+1 .*\n\s+3\s+no controller answers .*\n\s+4\s+/);
    expect(help.stdout).not.toContain("exit 1 when something is wrong");
    expect((await runCli(["doctor", "--state-dir", tempDir("i37-doctor")], EMBEDDED)).code).toBe(3);
  });

  it("item 5: up on two busy ports fails at once, names both ports and flags, and creates nothing", async () => {
    const servers: Server[] = [];
    const listen = async (port: number) => {
      const s = createServer();
      await new Promise<void>((r) => s.listen(port, "127.0.0.1", () => r()));
      servers.push(s);
      return (s.address() as AddressInfo).port;
    };
    try {
      const port = await listen(0);
      const agentPort = await listen(0);
      const state = join(tempDir("i37-busy"), "fresh");
      // Fast because the ports are checked first: every module the process loads is logged, and neither up
      // itself, the embedded database, the controller's start nor the agent is among them (it took 8.4 s when
      // the database was created first).
      const modules = join(tempDir("i37-busy-modules"), "loaded.txt");
      const hooks = new URL("../fixtures/module-log/register.mjs", import.meta.url).pathname;
      const res = await runCli(
        ["up", "--state-dir", state, "--port", String(port), "--agent-port", String(agentPort), "--pane-host", "none"],
        { ...EMBEDDED, NODE_OPTIONS: `--import=${hooks}`, CLANKIE_MODULE_LOG: modules },
      );
      const loaded = readFileSync(modules, "utf8").trim().split("\n");
      expect(loaded).toContainEqual(expect.stringMatching(/\/dist\/cli\/port-check\.js$/));
      for (const heavy of [/\/cli\/up\.js$/, /pglite/, /\/controller\/(main|db\/open)\.js$/, /\/dist\/node-agent\//])
        expect(
          loaded.filter((url) => heavy.test(url)),
          String(heavy),
        ).toEqual([]);
      expect(res.code).toBe(1);
      expect(res.stderr).toBe(
        `clankie: address_in_use: the port 127.0.0.1:${port} and the agent port 127.0.0.1:${agentPort} are taken by another process (another clankie?); nothing was created; stop it or choose another --port and --agent-port\n`,
      );
      expect(existsSync(state)).toBe(false);
    } finally {
      for (const s of servers) s.close();
    }
  });

  it("item 2: `clankie completion bash`, sourced in a real bash, completes commands, aliases, options and choices", () => {
    const script = `
      source <("${process.execPath}" "${CLI}" completion bash)
      t() { COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _clankie clankie "\${COMP_WORDS[COMP_CWORD]}" "\${COMP_WORDS[COMP_CWORD-1]}"; echo "\${COMPREPLY[*]}"; }
      t clankie rec
      t clankie receipts ""
      t clankie --state-dir /tmp/x receipts list --s
      t clankie seat r
      t clankie fleet list -o ""
      t clankie completion ""
      complete -p clankie`;
    const lines = execFileSync("bash", ["-c", script], { encoding: "utf8" }).trim().split("\n");
    expect(lines).toEqual([
      "receipts",
      "list ls show get",
      "--seat --state --since --state-dir",
      "rm remove",
      "json table",
      "bash zsh",
      "complete -F _clankie clankie",
    ]);
    expect(execFileSync(process.execPath, [CLI, "completion", "zsh"], { encoding: "utf8" })).toMatch(
      /^#compdef clankie\n[\s\S]*bashcompinit[\s\S]*_clankie\(\) \{[\s\S]*complete -F _clankie clankie\n$/,
    );
  });

  describe("against a running clankie up with a second machine", () => {
    let up: UpProcess;
    let stateDir: string;
    let agent: ChildProcess;
    let agentLog = "";
    const cli = (...args: string[]) => runCli([...args, "--state-dir", stateDir], EMBEDDED);
    const ids: string[] = [];

    beforeAll(async () => {
      stateDir = tempDir("i37-up");
      seedPglite(stateDir);
      up = await startUp(
        ["--state-dir", stateDir, "--port", "0", "--machine", "home", "--pane-host", "none"],
        EMBEDDED,
      );
      const token = json((await cli("fleet", "enroll", "box2", "-o", "json")).stdout).token as string;
      agent = spawn(
        process.execPath,
        [
          CLI,
          "agent",
          "--json",
          "--controller",
          up.ready.agentUrl,
          "--state-dir",
          tempDir("i37-box2"),
          "--machine",
          "box2",
          "--log-level",
          "info",
        ],
        {
          env: { ...process.env, CLANKIE_JOIN_TOKEN: token },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      agent.stderr!.on("data", (d: Buffer) => (agentLog += d.toString()));
      await new Promise<void>((resolve, reject) => {
        createInterface({ input: agent.stdout! }).once("line", () => resolve());
        agent.once("exit", (code) => reject(new Error(`box2's agent exited ${code}: ${agentLog}`)));
      });
      expect((await cli("seat", "add", "mailbox", "inbox", "--machine", "home")).code).toBe(0);
      for (const name of ["notes", "scratch"])
        expect((await cli("seat", "add", "mailbox", name, "--machine", "box2")).code).toBe(0);
      const lead = await connectLead(up.ready.mcpUrl, up.ready.token);
      try {
        for (const [seat, message] of [
          ["home/inbox", "one"],
          ["home/inbox", "two"],
          ["box2/notes", "three"],
        ] as const) {
          const r = await lead.call("message_seat", { seat, message });
          ids.push(String(r.structuredContent!.deliveryId));
        }
      } finally {
        await lead.close();
      }
    });
    afterAll(async () => {
      if (agent && agent.exitCode === null) {
        const gone = new Promise((r) => agent.once("exit", r));
        agent.kill("SIGTERM");
        await gone;
      }
      await up?.stop();
    });

    it("item 2: receipts list filters by seat, conversation, state, since, unresolved; pages by token", async () => {
      const all = json((await cli("receipts", "list", "-o", "json")).stdout);
      expect((all.receipts as { id: string }[]).map((r) => r.id)).toEqual([...ids].reverse());
      const first = json((await cli("receipts", "list", "--limit", "2", "--output=json")).stdout);
      expect(first).toMatchObject({ total: 3, nextPageToken: expect.any(String) });
      const second = json(
        (await cli("receipts", "list", "--limit", "2", "--page-token", first.nextPageToken as string, "--json")).stdout,
      );
      expect(
        [...(first.receipts as { id: string }[]), ...(second.receipts as { id: string }[])].map((r) => r.id),
      ).toEqual([...ids].reverse());
      expect(second.nextPageToken).toBe("");
      const bySeat = json(
        (await cli("receipts", "list", "--seat", "box2/notes", "--state", "delivered", "--since", "1h", "-o", "json"))
          .stdout,
      );
      expect((bySeat.receipts as { id: string }[]).map((r) => r.id)).toEqual([ids[2]]);
      expect(json((await cli("receipts", "list", "--since", "2999-01-01", "-o", "json")).stdout).receipts).toEqual([]);
      const table = await cli("receipts", "list", "--limit", "1");
      expect(table.stdout).toMatch(
        /^ID\s+SEAT\s+CONVERSATION\s+STATE\s+AGE\n\S+\s+box2\/notes\s+global-default\s+delivered\s+\d+ s\n\(3 match; next page: the same command with --page-token \S+\)\n$/,
      );
      const bad = await cli("receipts", "list", "--state", "lost");
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/^clankie: invalid_argument: --state must be one of dispatching, delivered/);

      // Another conversation's receipt: --conversation tells them apart; none of them is unresolved.
      const other = json((await cli("lead", "token", "--conversation", "release-0.4", "-o", "json")).stdout);
      const otherLead = await connectLead(up.ready.mcpUrl, other.token as string);
      try {
        const r = await otherLead.call("message_seat", { seat: "home/inbox", message: "four" });
        ids.push(String(r.structuredContent!.deliveryId));
      } finally {
        await otherLead.close();
      }
      const listed = async (...filter: string[]) =>
        (json((await cli("receipts", "list", ...filter, "-o", "json")).stdout).receipts as { id: string }[]).map(
          (r) => r.id,
        );
      expect(await listed("--conversation", "release-0.4")).toEqual([ids[3]]);
      expect(await listed("--conversation", "global-default")).toEqual(ids.slice(0, 3).reverse());
      expect(await listed("--unresolved")).toEqual([]);
    });

    it("item 2: receipts show: proofs, fence, settlements, -o json, and an id by its start", async () => {
      const shown = await cli("receipts", "show", ids[0]!);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(
        new RegExp(`^receipt ${ids[0]}\\n  seat: +home/inbox\\n  conversation: +global-default\\n  state: +delivered`),
      );
      expect(shown.stdout).toMatch(/\nproofs:\n {2}KIND\s+OUTCOME\s+AGE_AT_WRITE\s+DETAIL\n/);
      expect(shown.stdout).toMatch(/\nfence: /);
      expect(shown.stdout).toMatch(/\nsettlements:\n/);
      const doc = json((await cli("receipts", "show", ids[0]!, "-o", "json")).stdout);
      expect(doc).toMatchObject({
        receipt: { id: ids[0], state: "delivered" },
        proofs: expect.any(Array),
        settlements: expect.any(Array),
      });
      expect((doc.proofs as unknown[]).length).toBeGreaterThan(0);
      const missing = await cli("receipts", "show", "no-such-receipt");
      expect([missing.code, missing.stderr]).toEqual([1, "clankie: not_found: no receipt no-such-receipt\n"]);

      // As Nomad takes an id's start: show finds the one receipt it names; list --id filters by it.
      const start = ids[0]!.slice(0, 8);
      expect((await cli("receipts", "show", start)).stdout).toMatch(new RegExp(`^receipt ${ids[0]}\\n`));
      const byId = json((await cli("receipts", "list", "--id", start, "-o", "json")).stdout);
      expect((byId.receipts as { id: string }[]).map((r) => r.id)).toEqual([ids[0]]);
      // A start two receipts share names neither: both are listed, and more of the id is asked for.
      const lead = await connectLead(up.ready.mcpUrl, up.ready.token);
      try {
        for (const deliveryId of ["0b5e0000-0000-4000-8000-00000000000a", "0b5e0000-0000-4000-8000-00000000000b"])
          await lead.call(
            "message_seat",
            { seat: "home/inbox", message: deliveryId },
            { "clankie/seat-call": { deliveryId } },
          );
      } finally {
        await lead.close();
      }
      const twins = await cli("receipts", "show", "0b5e0000");
      expect(twins.code).toBe(2);
      expect(twins.stderr).toMatch(
        /^clankie: invalid_argument: 2 receipts start with 0b5e0000 \(0b5e0000-\S+, 0b5e0000-\S+\); give more of the id\n$/,
      );
    });

    it("item 2: -o json and -o table on every listing command; --json is the same document as -o json", async () => {
      for (const cmd of [
        ["seat", "list"],
        ["fleet", "list"],
        ["seat-delivery", "list"],
        ["hire-receipt", "list"],
        ["receipts", "list"],
      ]) {
        const asJson = await cli(...cmd, "-o", "json");
        expect(asJson.code, cmd.join(" ")).toBe(0);
        // Heartbeats and ages move between two runs: compare what does not.
        const still = (text: string) =>
          JSON.stringify(json(text), (k, v: unknown) => (/^(lastSeen|ageMs)$/.test(k) ? undefined : v));
        expect(still((await cli(...cmd, "--json")).stdout), cmd.join(" ")).toBe(still(asJson.stdout));
        const asTable = await cli(...cmd, "-o", "table");
        expect(asTable.stdout.startsWith("{"), cmd.join(" ")).toBe(false);
      }
      const wrong = await cli("seat", "list", "-o", "yaml");
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toMatch(/^clankie: usage: option '-o, --output <format>' argument 'yaml' is invalid/);
    });

    it("item 1: an online machine is not removed; revoked, its agent logs it and idles, doctor WARNs, and fleet remove asks first", async () => {
      const online = await cli("fleet", "remove", "box2", "--yes");
      expect([online.code, online.stderr]).toEqual([
        1,
        "clankie: failed_precondition: box2 is online and not revoked: revoke it first (clankie fleet revoke box2), or stop its agent and remove it once it is offline\n",
      ]);
      expect((await cli("seat", "rm", "box2/notes")).stderr).toMatch(
        /^clankie: failed_precondition: box2\/notes is still reported by its online machine box2/,
      );

      // Ages in s, m, h or d (an offline machine's in hours or days), never in milliseconds.
      expect((await cli("doctor")).stdout).toMatch(/\nok {4}agent box2: online, last heartbeat \d+ s ago, /);
      expect((await cli("fleet", "revoke", "box2")).code).toBe(0);
      const deadline = Date.now() + 20_000;
      while (!agentLog.includes("revoked by the fleet owner") && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(agentLog).toMatch(
        /this machine was revoked by the fleet owner: the agent stopped dialing the controller and idles/,
      );
      const logged = agentLog.length;
      await new Promise((r) => setTimeout(r, 2_000));
      expect(agent.exitCode).toBeNull();
      expect(agentLog.slice(logged)).not.toMatch(/redialling|registration failed/);

      const doctor = await cli("doctor");
      expect(doctor.code).toBe(0);
      expect(doctor.stdout).toContain("WARN  agent box2: revoked; remove it with: clankie fleet remove box2\n");
      expect(doctor.stdout).not.toMatch(/FAIL\s+agent box2/);
      expect(json((await cli("doctor", "-o", "json")).stdout).checks).toContainEqual({
        name: "agent box2",
        ok: true,
        warn: true,
        detail: "revoked; remove it with: clankie fleet remove box2",
      });

      // A seat of the revoked machine goes alone; the machine stays.
      const rm = await cli("seat", "rm", "box2/scratch");
      expect([rm.code, rm.stdout]).toEqual([
        0,
        "seat box2/scratch removed; its receipts stay (clankie receipts list --seat box2/scratch)\n",
      ]);

      const unanswered = await runWithInput(["fleet", "remove", "box2", "--state-dir", stateDir], "");
      expect(unanswered.stderr).toContain(
        "Remove machine box2 (revoked) and its 1 seat(s): box2/notes? Receipts stay; the machine needs a new join token to come back. [y/N] ",
      );
      expect(unanswered.code).toBe(1);
      expect(unanswered.stderr).toMatch(
        /clankie: failed_precondition: box2 was not removed \(not confirmed; pass --yes to remove without asking\)\n$/,
      );
      const declined = await runWithInput(["fleet", "remove", "box2", "--state-dir", stateDir], "n\n");
      expect(declined.code).toBe(1);
      expect(json((await cli("seat", "list", "-o", "json")).stdout).seats).toContainEqual(
        expect.objectContaining({ id: "box2/notes" }),
      );

      const removed = await runWithInput(["fleet", "remove", "box2", "--state-dir", stateDir], "y\n");
      expect(removed.code).toBe(0);
      expect(removed.stdout).toBe(
        "box2 removed (it was revoked), with 1 seat(s): box2/notes; its receipts stay (clankie receipts list)\n",
      );
      expect(
        (json((await cli("seat", "list", "-o", "json")).stdout).seats as { id: string }[]).map((s) => s.id),
      ).toEqual(["home/inbox"]);
      expect(
        (json((await cli("fleet", "list", "-o", "json")).stdout).machines as { machine: string }[]).map(
          (m) => m.machine,
        ),
      ).toEqual(["home"]);
      // The receipts and their history stay.
      expect(
        (
          json((await cli("receipts", "list", "--seat", "box2/notes", "-o", "json")).stdout).receipts as {
            id: string;
          }[]
        ).map((r) => r.id),
      ).toEqual([ids[2]]);
      expect((await cli("doctor")).stdout).not.toContain("box2");
    });

    it("item 1: seat remove (the alias of seat rm) refuses an unknown seat with a typed error", async () => {
      const unknown = await cli("seat", "remove", "box9/none");
      expect([unknown.code, unknown.stderr]).toEqual([
        1,
        "clankie: unknown_seat: no seat box9/none (clankie seat list shows them)\n",
      ]);
    });
  });
});
