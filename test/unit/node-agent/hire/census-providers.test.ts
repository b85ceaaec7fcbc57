/**
 * The hire census off Linux (issue 12, item 4 "not-launched only when a fresh census
 * proves …"; rule 53): the same census code runs on the macOS and Windows ProofProviders,
 * here on recorded provider output (test/fixtures/proofs/darwin/ps-axo-hire.txt with one
 * `ps -E` answer per pid, and windows/host-processes-hire.json with PEB detail records; no
 * Mac or Windows machine is available here). It finds the processes carrying the hire
 * marker (tmux) or naming the hire's Herdr pane, skips processes that are gone or belong to
 * another user, and where the provider cannot tell (no process table, an environment it
 * cannot read) it is incomplete and names why, so not-launched is refused with the reason.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { markedProcesses, observeHire } from "../../../../node-agent/hire/census.js";
import { notLaunchedRefusal, provesNoLaunch } from "../../../../controller/hire/census.js";
import { DarwinProofProvider } from "../../../../node-agent/proofs/darwin.js";
import { WindowsProofProvider } from "../../../../node-agent/proofs/windows.js";
import type { CommandResult, CommandRunner } from "../../../../node-agent/proofs/run-command.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";
import { recordedWindows, type RecordedWindows } from "../../../kit/recorded-windows.js";
import { create } from "@bufbuild/protobuf";
import { HireCensusResponseSchema } from "../../../../shared/gen/clankie/fleet/v1/hire_pb.js";

const HIRE = "5c52aeed-40e1-4ae9-854c-8955b8d017d6";
const OTHER = "0d5e3c1a-9f2b-4c7d-8e6a-1b2c3d4e5f60";
const darwinFixture = (name: string) =>
  readFileSync(new URL(`../../../fixtures/proofs/darwin/${name}`, import.meta.url), "utf8");
const ok = (stdout: string): CommandResult => ({ code: 0, stdout, stderr: "", isMissing: false });

/** Replays macOS: the ps table, and `ps -E … -p PID` from hire-ps-E/PID.txt; `broken` pids answer as a failing ps. */
function darwin(o: { table?: string | "missing"; broken?: number[] } = {}): DarwinProofProvider {
  const runner: CommandRunner = async (file, args) => {
    if (file !== "ps") return { code: -1, stdout: "", stderr: "", isMissing: true };
    if (o.table === "missing") return { code: -1, stdout: "", stderr: "", isMissing: true };
    if (args[0] === "-E") {
      const pid = Number(args[args.length - 1]);
      if (o.broken?.includes(pid))
        return { code: 1, stdout: "", stderr: "ps: sysctl: Operation timed out", isMissing: false };
      return ok(darwinFixture(`hire-ps-E/${pid}.txt`));
    }
    return ok(darwinFixture(o.table ?? "ps-axo-hire.txt"));
  };
  return new DarwinProofProvider(systemMonotonicClock, runner, 501);
}

const WINDOWS: RecordedWindows = {
  processes: "host-processes-hire.json",
  detail: {
    612: "detail-hire-explorer.json",
    666: "detail-access-denied.json",
    7000: "detail-hire-herdr.json",
    7400: "detail-hire-pi.json",
    7410: "detail-hire-pi-child.json",
    7500: "detail-hire-other-pane.json",
    7777: "detail-hire-explorer.json",
  },
};
const windows = (files: RecordedWindows = {}) =>
  new WindowsProofProvider(
    recordedWindows({ ...WINDOWS, ...files, detail: { ...WINDOWS.detail, ...files.detail } }),
    systemMonotonicClock,
    7777,
  );
const herdrPane = (paneId: string, socket: string) => [{ HERDR_PANE_ID: paneId, HERDR_SOCKET_PATH: socket }];

describe("the hire census on macOS (recorded ps output)", () => {
  it("finds the tmux-launched harness and its child by the hire marker; not another hire's, not another user's, not a zombie", async () => {
    expect(await markedProcesses(HIRE, darwin())).toEqual({ pids: [620, 630], unknown: [] });
    expect(await markedProcesses(OTHER, darwin())).toEqual({ pids: [], unknown: [] });
  });

  it("finds a Herdr-launched harness (no marker: agent.start takes no environment) by its pane's HERDR_PANE_ID and socket", async () => {
    const sock = "/Users/worker/.config/herdr/herdr.sock";
    expect((await markedProcesses(OTHER, darwin(), herdrPane("w1:p3", sock))).pids).toEqual([720]);
    // Another pane, or the same pane id of another Herdr server, is not this hire's.
    expect((await markedProcesses(OTHER, darwin(), herdrPane("w1:p9", sock))).pids).toEqual([]);
    expect(
      (await markedProcesses(OTHER, darwin(), herdrPane("w1:p3", "/Users/worker/.config/herdr/sessions/b/herdr.sock")))
        .pids,
    ).toEqual([]);
  });

  it("an environment ps cannot read (not another user's) makes the census incomplete, and not-launched is refused with that reason", async () => {
    const r = await markedProcesses(OTHER, darwin({ broken: [710] }));
    expect(r.pids).toEqual([]);
    expect(r.unknown).toEqual([
      expect.stringMatching(
        /^pid 710 \(herdr\): its environment is race \(ps -E -o command exited 1: ps: sysctl: Operation timed out\)/,
      ),
    ]);
    const view = await observeHire(OTHER, darwin({ broken: [710] }), undefined, undefined);
    expect(view).toMatchObject({ complete: false, processes: [], panes: [] });
    const incomplete = create(HireCensusResponseSchema, {
      journalState: "sealed",
      complete: view.complete,
      unknown: view.unknown,
    });
    expect(provesNoLaunch(incomplete)).toBe(false);
    // The owner is told why: the refusal names what the provider could not tell.
    expect(notLaunchedRefusal("mac", OTHER, incomplete)).toMatch(
      /does not prove .* the census is incomplete: pid 710 \(herdr\): its environment is race/,
    );
    // The same machine read fully proves it.
    const full = await observeHire(OTHER, darwin(), undefined, undefined);
    expect(full).toMatchObject({ complete: true, unknown: [] });
    expect(provesNoLaunch(create(HireCensusResponseSchema, { journalState: "sealed", complete: full.complete }))).toBe(
      true,
    );
  });

  it("no ps at all: no process table, so the census is incomplete and says why", async () => {
    const view = await observeHire(HIRE, darwin({ table: "missing" }), undefined, undefined);
    expect(view.complete).toBe(false);
    expect(view.unknown).toEqual(["darwin cannot list this host's processes (unsupported: ps is not installed)"]);
  });
});

describe("the hire census on Windows (recorded PowerShell host output)", () => {
  const pipe = "\\\\.\\pipe\\herdr-default";

  it("finds the Herdr-launched Pi and its child by HERDR_PANE_ID (names case-folded); another pane's process and access-denied ones are not the hire's", async () => {
    expect(await markedProcesses(HIRE, windows(), herdrPane("w1:p3", pipe))).toEqual({
      pids: [7400, 7410],
      unknown: [],
    });
    expect(await markedProcesses(HIRE, windows(), herdrPane("w1:p5", pipe))).toEqual({ pids: [], unknown: [] });
  });

  it("a 32-bit process whose PEB cannot be read makes the census incomplete, naming it", async () => {
    const r = await markedProcesses(
      HIRE,
      windows({ detail: { 7600: "detail-hire-wow64.json" } }),
      herdrPane("w1:p3", pipe),
    );
    expect(r.pids).toEqual([7400, 7410]);
    expect(r.unknown).toEqual([expect.stringMatching(/^pid 7600 \(setup32\.exe\): its environment is unsupported/)]);
  });

  it("a process table the host cannot give is incomplete, never an empty census", async () => {
    const view = await observeHire(HIRE, windows({ processes: "malformed-shape.json" }), undefined, undefined);
    expect(view).toMatchObject({ complete: false, processes: [] });
    expect(view.unknown[0]).toMatch(/^win32 cannot list this host's processes/);
  });
});
