/**
 * Rules 36 and 47 on Herdr (ADR 0040 addendum, issue 12 item 5): Herdr's agent.start takes no
 * environment, so a Herdr-launched Codex carries no hire marker. It is owned when the exact
 * process runs with Herdr's own HERDR_PANE_ID of the pane a Codex hire recorded in the host
 * journal together with an agent-started app-server not yet stopped; its control is then gated
 * by that server's proof. Real child processes and a real host journal on disk.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { codexOwner, type HireLookup } from "../../../../../node-agent/harnesses/codex/ownership.js";
import { HostJournal } from "../../../../../node-agent/hire/host-journal.js";
import { systemMonotonicClock } from "../../../../../node-agent/proofs/proof.js";
import { selectProofProvider } from "../../../../../node-agent/proofs/select.js";
import { tempDir } from "../../../../kit/test-db.js";

describe.runIf(process.platform === "linux")(
  "rules 36/47 on Herdr: ownership by the Herdr pane a Codex hire recorded with its app-server",
  () => {
    const provider = selectProofProvider("linux", systemMonotonicClock);
    const journal = new HostJournal(tempDir("codex-owner-herdr"));
    const lookup: HireLookup = { launched: (id) => journal.read(id), ofPane: (p) => journal.byPane(p) };
    const children: ChildProcess[] = [];
    const start = async (env: Record<string, string>) => {
      const child = spawn("/bin/sleep", ["60"], { env: { PATH: "/usr/bin:/bin", ...env }, stdio: "ignore" });
      children.push(child);
      await new Promise((r) => child.once("spawn", r));
      const id = await provider.identify(child.pid!);
      if (!id.known) throw new Error(`cannot identify the child: ${id.detail}`);
      return { pid: id.value.pid, startTime: id.value.startTime };
    };
    const record = (paneId: string, o: { harness?: string; server?: boolean; stopped?: boolean } = {}) => {
      const hireId = randomUUID();
      journal.write({
        hireId,
        fingerprint: "f",
        state: "finished",
        harness: o.harness ?? "codex",
        reservedAtMs: Date.now(),
        paneId,
        ...(o.server === false
          ? {}
          : { codexServer: { pid: 1, startTime: 1, socketPath: "/s.sock", ...(o.stopped ? { stoppedAtMs: 1 } : {}) } }),
      });
      return hireId;
    };
    afterAll(() => {
      for (const c of children) c.kill("SIGKILL");
    });

    it("issue 12 item 5: a TUI in the Herdr pane a Codex hire recorded with its app-server is owned by that hire", async () => {
      const hireId = record("w1:p1");
      expect(await codexOwner(provider, await start({ HERDR_PANE_ID: "w1:p1" }), "w1:p1", lookup)).toBe(hireId);
    });
    it("rules 36/47: another pane's id, no Herdr pane id, a hire without a server (or with it stopped), another harness, or no pane lookup: unowned", async () => {
      record("w1:p2");
      expect(await codexOwner(provider, await start({ HERDR_PANE_ID: "w1:p9" }), "w1:p2", lookup)).toBeUndefined();
      expect(await codexOwner(provider, await start({}), "w1:p2", lookup)).toBeUndefined();
      expect(
        await codexOwner(provider, await start({ HERDR_PANE_ID: "w1:p2" }), "w1:p2", { launched: lookup.launched }),
      ).toBeUndefined();
      record("w1:p3", { server: false });
      expect(await codexOwner(provider, await start({ HERDR_PANE_ID: "w1:p3" }), "w1:p3", lookup)).toBeUndefined();
      record("w1:p4", { stopped: true });
      expect(await codexOwner(provider, await start({ HERDR_PANE_ID: "w1:p4" }), "w1:p4", lookup)).toBeUndefined();
      record("w1:p5", { harness: "pi" });
      expect(await codexOwner(provider, await start({ HERDR_PANE_ID: "w1:p5" }), "w1:p5", lookup)).toBeUndefined();
    });
  },
);
