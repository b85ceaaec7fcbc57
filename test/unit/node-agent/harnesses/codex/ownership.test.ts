/**
 * Rules 36 and 47: a Codex seat is owned only when the exact process carries this agent's
 * hire marker in its kernel-held environment AND the host journal records that hire as a
 * Codex launch in the same pane. Real child processes and a real host journal on disk; the
 * facts come from this OS's proof provider.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { codexOwner } from "../../../../../node-agent/harnesses/codex/ownership.js";
import { HostJournal } from "../../../../../node-agent/hire/host-journal.js";
import { HIRE_ENV } from "../../../../../node-agent/hire/pane-opener.js";
import { systemMonotonicClock } from "../../../../../node-agent/proofs/proof.js";
import { selectProofProvider } from "../../../../../node-agent/proofs/select.js";
import { tempDir } from "../../../../kit/test-db.js";

describe.runIf(process.platform === "linux")(
  "rules 36/47: Codex ownership from the hire marker and the host journal",
  () => {
    const provider = selectProofProvider("linux", systemMonotonicClock);
    const journal = new HostJournal(tempDir("codex-owner"));
    const lookup = { launched: (id: string) => journal.read(id) };
    const hireId = randomUUID();
    const children: ChildProcess[] = [];
    const start = async (env: Record<string, string>) => {
      const child = spawn("/bin/sleep", ["60"], { env: { PATH: "/usr/bin:/bin", ...env }, stdio: "ignore" });
      children.push(child);
      await new Promise((r) => child.once("spawn", r));
      const id = await provider.identify(child.pid!);
      if (!id.known) throw new Error(`cannot identify the child: ${id.detail}`);
      return { pid: id.value.pid, startTime: id.value.startTime };
    };
    beforeAll(() => {
      journal.write({
        hireId,
        fingerprint: "f",
        state: "launch_committed",
        harness: "codex",
        reservedAtMs: Date.now(),
        paneId: "%7",
      });
    });
    afterAll(() => {
      for (const c of children) c.kill("SIGKILL");
    });

    it("the marker of a Codex hire recorded in this pane: owned by that hire", async () => {
      expect(await codexOwner(provider, await start({ [HIRE_ENV]: hireId }), "%7", lookup)).toBe(hireId);
    });
    it("the same marker in another pane, an unknown or malformed hire id, no marker, or no journal: unowned", async () => {
      const marked = await start({ [HIRE_ENV]: hireId });
      expect(await codexOwner(provider, marked, "%8", lookup)).toBeUndefined();
      expect(await codexOwner(provider, marked, "%7", undefined)).toBeUndefined();
      expect(await codexOwner(provider, await start({ [HIRE_ENV]: randomUUID() }), "%7", lookup)).toBeUndefined();
      expect(await codexOwner(provider, await start({ [HIRE_ENV]: "not-a-uuid" }), "%7", lookup)).toBeUndefined();
      expect(await codexOwner(provider, await start({}), "%7", lookup)).toBeUndefined();
    });
    it("a hire recorded for another harness in this pane does not own a Codex", async () => {
      const other = randomUUID();
      journal.write({
        hireId: other,
        fingerprint: "f",
        state: "launch_committed",
        harness: "opencode",
        reservedAtMs: Date.now(),
        paneId: "%7",
      });
      expect(await codexOwner(provider, await start({ [HIRE_ENV]: other }), "%7", lookup)).toBeUndefined();
    });
  },
);
