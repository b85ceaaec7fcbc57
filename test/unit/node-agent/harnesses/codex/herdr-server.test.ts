/**
 * ADR 0040 addendum (Herdr), issue 12 item 5, lifecycle: the Codex app-server the agent starts
 * for a Herdr hire lives exactly as long as its hire's TUI. The keeper (codex-server-keeper.ts)
 * adopts recorded servers from the host journal (a restarted agent), keeps one while the pane
 * runs its TUI or while Herdr cannot tell, stops it (its whole group) once the pane or TUI is
 * gone or the hire closed its pane, and never signals a recorded pid that is now another
 * lifetime. Real detached processes stand in only for the server's lifetime; the TUI probe is
 * Herdr's answer (Herdr is the one fake). Also: a server that exits before it listens is a
 * launch failure with nothing left running.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CodexServerKeeper, type TuiState } from "../../../../../node-agent/harnesses/codex/server-keeper.js";
import { CodexLauncher } from "../../../../../node-agent/harnesses/codex/launch.js";
import { HostJournal, type RecordedCodexServer } from "../../../../../node-agent/hire/host-journal.js";
import { HIRE_ENV } from "../../../../../node-agent/hire/pane-opener.js";
import { silentLogger } from "../../../../../shared/logger.js";
import { systemMonotonicClock } from "../../../../../node-agent/proofs/proof.js";
import { selectProofProvider } from "../../../../../node-agent/proofs/select.js";
import { allPids, isFailure, readEnviron } from "../../../../../node-agent/proofs/linux-read.js";
import { tempDir } from "../../../../kit/test-db.js";

describe.runIf(process.platform === "linux")(
  "the agent-started Codex server's lifecycle on Herdr (ADR 0040 addendum)",
  () => {
    const provider = selectProofProvider("linux", systemMonotonicClock);
    const dir = tempDir("codex-keeper");
    const journal = new HostJournal(dir);
    const children: ChildProcess[] = [];
    const states = new Map<string, TuiState>();
    const panes = { tuiState: async (paneId: string) => states.get(paneId) ?? "unknown" };
    afterAll(() => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    });
    const server = async (): Promise<RecordedCodexServer> => {
      const child = spawn("/bin/sleep", ["60"], { detached: true, stdio: "ignore" });
      children.push(child);
      await new Promise((r) => child.once("spawn", r));
      const id = await provider.identify(child.pid!);
      if (!id.known) throw new Error(id.detail);
      return {
        pid: id.value.pid,
        startTime: id.value.startTime,
        socketPath: join(dir, `${child.pid}.sock`),
        pgid: child.pid!,
      };
    };
    const hire = async (paneId: string, o: { paneClosed?: boolean; server?: RecordedCodexServer } = {}) => {
      const hireId = randomUUID();
      const codexServer = o.server ?? (await server());
      journal.write({
        hireId,
        fingerprint: "f",
        state: "finished",
        harness: "codex",
        reservedAtMs: Date.now(),
        paneId,
        codexServer,
        answer: {
          outcome: o.paneClosed ? "failed" : "spawned",
          reason: "",
          detail: "",
          launchCommitted: true,
          paneClosed: o.paneClosed,
        },
      });
      return { hireId, codexServer };
    };
    const alive = async (s: RecordedCodexServer) => {
      const f = await provider.identify(s.pid);
      return f.known && f.value.startTime === s.startTime;
    };

    it("lifecycle: a restarted agent adopts the journal's servers; it keeps one while its TUI runs or Herdr cannot tell, and stops one whose TUI or pane is gone", async () => {
      const running = await hire("p-run");
      const unknown = await hire("p-unknown");
      const gone = await hire("p-gone");
      states.set("p-run", "running").set("p-gone", "gone");
      const keeper = new CodexServerKeeper({ journal, proofs: provider, panes, logger: silentLogger, everyMs: 60_000 });
      keeper.start();
      expect(keeper.watching()).toEqual(expect.arrayContaining([running.hireId, unknown.hireId, gone.hireId]));
      await keeper.tick();
      keeper.close();
      expect(await alive(running.codexServer)).toBe(true);
      expect(await alive(unknown.codexServer)).toBe(true);
      expect(await alive(gone.codexServer)).toBe(false);
      expect(journal.read(gone.hireId)!.codexServer!.stoppedAtMs).toEqual(expect.any(Number));
      expect(journal.read(running.hireId)!.codexServer!.stoppedAtMs).toBeUndefined();
      expect(keeper.watching()).not.toContain(gone.hireId);
    });

    it("lifecycle: a hire that definitely failed and closed its pane has its server stopped without asking Herdr", async () => {
      const closed = await hire("p-closed", { paneClosed: true });
      states.set("p-closed", "running");
      const keeper = new CodexServerKeeper({ journal, proofs: provider, panes, logger: silentLogger, everyMs: 60_000 });
      keeper.watch(closed.hireId);
      await keeper.tick();
      expect(await alive(closed.codexServer)).toBe(false);
    });

    it("lifecycle: a recorded pid that is now another lifetime is never signalled; the record is marked ended", async () => {
      const real = await server();
      const stale = await hire("p-stale", { server: { ...real, startTime: real.startTime - 1 } });
      states.set("p-stale", "gone");
      const keeper = new CodexServerKeeper({ journal, proofs: provider, panes, logger: silentLogger, everyMs: 60_000 });
      keeper.watch(stale.hireId);
      await keeper.tick();
      expect(await alive(real)).toBe(true);
      expect(journal.read(stale.hireId)!.codexServer!.stoppedAtMs).toEqual(expect.any(Number));
    });

    it("issue 12 item 5: on Herdr a Codex server that exits before it listens fails the plan, and nothing carrying the hire marker is left", async () => {
      const hireDir = join(dir, "h");
      mkdirSync(hireDir, { recursive: true });
      const hireId = randomUUID();
      const ctx = {
        bin: "/bin/false",
        hireDir,
        claudeChannelDir: dir,
        claudeReportDir: dir,
        piSocketDir: dir,
        claudeChannel: "development" as const,
        agentStateDir: dir,
        workerToolApproval: "owner" as const,
        env: {},
        paneHost: "herdr" as const,
        proofs: provider,
      };
      await expect(
        new CodexLauncher().plan({ hireId, workingDirectory: dir, title: "t", effort: "high" }, ctx),
      ).rejects.toThrow(/exited .* before it listened/);
      expect(existsSync(join(hireDir, "codex.sock"))).toBe(false);
      expect(
        allPids().filter((p) => {
          const env = readEnviron(p);
          return !isFailure(env) && env.get(HIRE_ENV) === hireId;
        }),
      ).toEqual([]);
    });
  },
);
