/**
 * The hire's small parts: the agent's own directory and title checks, the brief id derived
 * once per hire, the host journal (durable, torn files never read as absent), and a census
 * that cannot see processes is incomplete, so it never proves that nothing launched.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkDirectory, checkTitle } from "../../../../node-agent/hire/validate.js";
import { briefDeliveryId } from "../../../../node-agent/hire/brief.js";
import { HostJournal } from "../../../../node-agent/hire/host-journal.js";
import { markedProcesses, observeHire } from "../../../../node-agent/hire/census.js";
import { HIRE_ENV } from "../../../../node-agent/hire/pane-opener.js";
import { LinuxProofProvider } from "../../../../node-agent/proofs/linux.js";
import { UnsupportedProofProvider } from "../../../../node-agent/proofs/unsupported.js";
import { isUuid } from "../../../../shared/ids.js";

const ID = "7b0c8f6e-2a8b-4f3e-9d55-0c1f2e3a4b5c";
const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), "clankie-hire-unit-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("hire checks on the agent", () => {
  it("refuses relative, '..' and control-character paths, and names a missing directory unknown_directory", () => {
    expect(checkDirectory("rel/dir")?.reason).toBe("invalid_argument");
    expect(checkDirectory("/a/../b")?.reason).toBe("invalid_argument");
    expect(checkDirectory("/tmp/\u0007bell")?.reason).toBe("invalid_argument");
    expect(checkDirectory("/definitely/not/here")).toMatchObject({
      reason: "unknown_directory",
      controlFix: expect.stringMatching(/create/),
    });
    const file = join(temp(), "f");
    writeFileSync(file, "x");
    expect(checkDirectory(file)?.reason).toBe("unknown_directory");
    expect(checkDirectory(temp())).toBeUndefined();
  });

  it("refuses titles with control characters or blank ones", () => {
    expect(checkTitle("ok title")).toBeUndefined();
    expect(checkTitle("esc\u001b[2J")?.reason).toBe("invalid_argument");
    expect(checkTitle("c1\u009bcontrol")?.reason).toBe("invalid_argument");
    expect(checkTitle("   ")?.reason).toBe("invalid_argument");
  });
});

describe("the brief's delivery id", () => {
  it("is a UUID derived from the hire id alone: one hire, one brief id, ever", () => {
    const a = briefDeliveryId(ID);
    expect(isUuid(a)).toBe(true);
    expect(briefDeliveryId(ID.toUpperCase())).toBe(a);
    expect(briefDeliveryId("00000000-0000-4000-8000-000000000000")).not.toBe(a);
  });
});

describe("HostJournal", () => {
  it("writes and reads records durably; a torn file throws, never reads as absent", () => {
    const j = new HostJournal(temp());
    expect(j.read(ID)).toBeUndefined();
    j.write({ hireId: ID, fingerprint: "f", state: "launch_committed", reservedAtMs: 1 });
    expect(j.read(ID)).toMatchObject({ state: "launch_committed" });
    writeFileSync(join(j.dir, `${ID}.json`), '{"hireId":"');
    expect(() => j.read(ID)).toThrow();
    expect(() => j.read("not-a-uuid")).toThrow(/uuid/);
  });
});

describe("the hire census", () => {
  it("finds the processes carrying the hire marker through the ProofProvider, none for an unknown hire, and is incomplete where it cannot look", async () => {
    const host = new LinuxProofProvider();
    expect((await markedProcesses(ID, host)).pids).toEqual([]);
    const other = "0d5e3c1a-9f2b-4c7d-8e6a-1b2c3d4e5f60";
    const child = spawn("sleep", ["30"], { env: { ...process.env, [HIRE_ENV]: other }, stdio: "ignore" });
    try {
      await new Promise((r) => child.once("spawn", r));
      expect(await markedProcesses(other, host)).toEqual({ pids: [child.pid], unknown: [] });
    } finally {
      child.kill("SIGKILL");
    }
    expect((await markedProcesses(ID, new UnsupportedProofProvider("plan9"))).unknown[0]).toMatch(
      /plan9 cannot list this host's processes \(unsupported/,
    );
    const view = await observeHire(ID, host, undefined, undefined);
    expect(view).toMatchObject({ panes: [], processes: [], sessions: [], complete: true });
    expect((await observeHire(ID, new UnsupportedProofProvider("plan9"), undefined, undefined)).complete).toBe(false);
    expect(view.sha256).toMatch(/^[0-9a-f]{64}$/);
  });
});
