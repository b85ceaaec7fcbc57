/**
 * The census covers a hired Codex's private app-server (rule 53, scenario 27; ADR 0040
 * addendum): the real Codex is hired in real tmux with its own `codex app-server --listen
 * unix://SOCK` in the pane, and the brief's native answer is lost after the write (the agent's
 * drop_brief_answer fault point, node-agent/hire/faults.ts). The lead gets
 * delivery_unconfirmed; the owner's `not-launched` is refused by the census, which names the
 * app-server process (it carries the hire marker) beside the TUI; a replay starts nothing.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import { runCli } from "../kit/cli.js";
import { isFailure, readCmdline } from "../../node-agent/proofs/linux-read.js";
import { requireHarness } from "./kit/harness-bin.js";
import { codexHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { cleanupCodexEnv } from "./kit/codex-env.js";

const bin = requireHarness("codex");
const META = "clankie/seat-call";
const argvOf = (pid: number) => {
  const a = readCmdline(pid);
  return isFailure(a) ? [] : a;
};

describe("the census of a hired Codex names its private app-server", () => {
  let mock: MockResponsesServer;
  let env: HireEnv;
  let fleet: HireFleet;
  const hireId = randomUUID();
  const marker = `census-${hireId.slice(0, 8)}`;
  let args: Record<string, unknown>;

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    mock = await startMockResponsesServer();
    env = codexHireEnv(bin, mock.baseUrl);
    fleet = await startHireFleet("pglite", { hire: { ...env.hire, fault: "drop_brief_answer" } });
    args = {
      harness: "codex",
      workingDirectory: env.work,
      title: "codex worker",
      role: "tester",
      brief: `${marker}: go`,
    };
  });
  afterAll(async () => {
    await fleet?.close();
    if (env)
      cleanupCodexEnv(bin!, {
        root: env.root,
        home: env.hire.env!.HOME!,
        codexHome: env.hire.env!.CODEX_HOME!,
        workDir: env.work,
        env: { ...env.hire.env },
      });
    await mock?.close();
  });

  it("rule 53: delivery_unconfirmed; not-launched is refused and the census lists the private app-server; a replay starts nothing", async () => {
    const res = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
      outcome: "failed",
      reason: "delivery_unconfirmed",
      hireId,
      launchCommitted: true,
    });
    const server = fleet.markedProcesses(hireId).find((p) => argvOf(p).slice(1, 3).join(" ") === "app-server --listen");
    expect(server, JSON.stringify(fleet.markedProcesses(hireId).map(argvOf))).toBeDefined();
    const roots = fleet.launchedRoots(hireId);
    const refused = await runCli([
      "hire-receipt",
      "settle",
      hireId,
      "not-launched",
      "--json",
      "--state-dir",
      fleet.stateDir,
    ]);
    expect(refused.code).toBe(1);
    const r = JSON.parse(refused.stdout) as { state: string; detail: string };
    expect(r.state).toBe("refused");
    const listed = /processes ([\d, ]+);/.exec(r.detail)?.[1]?.split(", ").map(Number) ?? [];
    expect(listed, r.detail).toContain(server);
    const again = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    expect(again.structuredContent).toMatchObject({ reason: "delivery_unconfirmed", hireId });
    expect(fleet.panes().filter((p) => p.hire === hireId)).toHaveLength(1);
    expect(fleet.launchedRoots(hireId)).toEqual(roots);
    await mock.waitFor((q) => q.lastUserText.includes(marker));
    expect(mock.maxCopiesInOneRequest(marker)).toBe(1);
  });
});
