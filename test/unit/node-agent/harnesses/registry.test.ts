/**
 * Issue 33 item 2: adding a harness is a new folder and one registry line. A lab harness defined
 * here, with its own adapter, discovery and launcher, is added to the registry's list and nothing
 * else: the agent's start-up registers its adapter and launcher, hire lists it, pane discovery asks
 * it, a delivery to a seat of its kind goes through its adapter, and the question desk watches its seats.
 */
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { AgentResult, SeatKind, SeatStatus } from "../../../../shared/verdicts.js";
import { silentLogger } from "../../../../shared/logger.js";
import type { HarnessAdapter, NativeWrite, SeatRecord } from "../../../../node-agent/harnesses/adapter.js";
import type { HarnessPlugin } from "../../../../node-agent/harnesses/plugin.js";
import { HARNESSES, hireKinds } from "../../../../node-agent/harnesses/registry.js";
import { createNativeAdapters, type NativeAdapters } from "../../../../node-agent/harnesses/native-adapters.js";
import type { HarnessLauncher } from "../../../../node-agent/hire/launcher.js";
import { HostJournal } from "../../../../node-agent/hire/host-journal.js";
import { MailboxStore } from "../../../../node-agent/mailbox/store.js";
import { HerdrPaneHost } from "../../../../node-agent/panes/herdr.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";
import { SeatBook } from "../../../../node-agent/seats/seat-book.js";
import { scanPanes } from "../../../../node-agent/seats/discovery.js";
import { deliver } from "../../../../node-agent/deliver/deliver.js";
import { QuestionDesk } from "../../../../node-agent/questions/question-desk.js";
import { startFakeHerdr } from "../../../kit/fake-herdr.js";
import { tempDir } from "../../../kit/test-db.js";

// A real harness also adds its wire name (shared/verdicts.ts, the proto enum): that is the wire contract.
const LAB = "lab" as SeatKind;

/** The lab harness: a pane whose foreground process is `lab-harness` is its seat; writes are kept here. */
function labPlugin(written: NativeWrite[]): HarnessPlugin {
  const launcher: HarnessLauncher = {
    harness: LAB,
    plan: async () => ({ argv: ["lab-harness"], env: {} }),
    screenBlock: () => undefined,
  };
  const adapter: HarnessAdapter = {
    kind: LAB,
    inspect: async (seat) => ({
      snapshot: {
        status: SeatStatus.Idle,
        occupantId: seat.occupantId,
        inputCapabilities: { deliveryModes: [], interrupt: false, nextTurnOnly: false },
      },
      proofs: [{ kind: "lab_alive", outcome: "proven", detail: "lab", completedAtMs: systemMonotonicClock.nowMs() }],
    }),
    write: async (_seat, message) => {
      written.push(message);
      return { result: AgentResult.Delivered, nativeReceiptId: `lab-${written.length}` };
    },
    readSession: async (seat) => ({
      occupantId: seat.occupantId,
      status: SeatStatus.Idle,
      entries: [],
      complete: true,
    }),
    discover: async (pane, processes): Promise<SeatRecord | undefined> => {
      const lab = processes.foregroundProcesses.find((p) => p.argv[0] === "lab-harness");
      if (!lab) return undefined;
      return {
        name: `lab-${pane.paneId.replace(/\W/g, "")}`,
        kind: LAB,
        title: "lab",
        occupantId: `lab-${lab.pid}`,
        createdAtMs: Date.now(),
      };
    },
  };
  return { kind: LAB, hire: true, start: () => ({ adapter, launcher }) };
}

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

function startWith(plugins: readonly HarnessPlugin[]): NativeAdapters {
  const stateDir = tempDir("registry-state");
  const native = createNativeAdapters(
    {
      clock: systemMonotonicClock,
      stateDir,
      mailboxes: new MailboxStore(tempDir("registry-mbx")),
      hires: new HostJournal(stateDir),
      stillOccupied: () => true,
    },
    plugins,
  );
  closers.push(() => native.close());
  return native;
}

describe("the harness registry (issue 33 item 2)", () => {
  it("the registry lists every built-in harness once, and hire offers those with a launcher", () => {
    expect(HARNESSES.map((h) => h.kind)).toEqual([
      SeatKind.Mailbox,
      SeatKind.Codex,
      SeatKind.Claude,
      SeatKind.OpenCode,
      SeatKind.Pi,
    ]);
    expect(hireKinds()).toEqual([SeatKind.Codex, SeatKind.Claude, SeatKind.OpenCode, SeatKind.Pi]);
    const native = startWith(HARNESSES);
    for (const h of HARNESSES) expect(native.adapters.get(h.kind)?.kind).toBe(h.kind);
    expect([...native.launchers.keys()]).toEqual(hireKinds());
  });

  it("issue 33 item 2: a harness added by one registry line gets its adapter, launcher and hire listing", () => {
    const plugins = [...HARNESSES, labPlugin([])];
    const native = startWith(plugins);
    expect(native.adapters.get(LAB)?.kind).toBe(LAB);
    expect(native.launchers.get(LAB)?.harness).toBe(LAB);
    expect(hireKinds(plugins)).toContain(LAB);
    expect(hireKinds()).not.toContain(LAB);
  });

  it("issue 33 item 2: discovery asks the added harness, and delivery writes through its adapter", async () => {
    const written: NativeWrite[] = [];
    const native = startWith([...HARNESSES, labPlugin(written)]);
    const herdr = await startFakeHerdr();
    closers.push(() => herdr.close());
    const host = new HerdrPaneHost({ socketPath: herdr.socketPath, reconnectMs: 20 });
    closers.push(() => host.close());
    const labProcess = { pid: process.pid, name: "lab-harness", argv: ["lab-harness"] };
    herdr.addPane(
      { pane_id: "w1:p7" },
      { shell_pid: 1, foreground_process_group_id: 1, tty: null, foreground_processes: [labProcess] },
    );
    const seats = new SeatBook(tempDir("registry-seats"));

    const report = await scanPanes(host, native.adapters, seats, silentLogger);
    expect(report).toMatchObject({ ok: true, seats: ["lab-w1p7"] });
    const seat = seats.get("lab-w1p7")!;
    expect(seat.kind).toBe(LAB);

    const deliveryId = randomUUID();
    const verdict = await deliver(
      { seats, adapters: native.adapters, clock: systemMonotonicClock },
      {
        seatName: seat.name,
        deliveryId,
        text: "hello lab",
        mode: "auto",
        conversationId: "c",
        occupantId: seat.occupantId,
        authorityAgeMs: 1,
        arrivedAtMs: systemMonotonicClock.nowMs(),
      },
    );
    expect(verdict).toMatchObject({ result: AgentResult.Delivered, nativeReceiptId: "lab-1" });
    expect(written.map((w) => [w.deliveryId, w.text])).toEqual([[deliveryId, "hello lab"]]);
  });

  it("issue 33 item 2: the question desk watches a seat of the added harness through its plugin", async () => {
    const answered: string[] = [];
    const lab: HarnessPlugin = {
      ...labPlugin([]),
      questions: {
        watchable: (seat) => seat.kind === LAB,
        attach: async () => ({
          ok: true,
          watcher: {
            onQuestion: () => undefined,
            answer: async (requestId) => {
              answered.push(requestId);
              return { result: "not_sent", reason: "refused_by_harness", detail: "lab" };
            },
            reconcile: async () => ({ result: "not_sent", reason: "no_claim", detail: "lab" }),
            close: () => undefined,
          },
        }),
      },
    };
    const seats = new SeatBook(tempDir("registry-q-seats"));
    const { seat } = seats.add("lab-q", LAB, "lab");
    const refuse = () => Promise.reject(new Error("no question is filed in this test"));
    const link = { gateway: { submitWorkerQuestion: refuse }, machine: "m", instanceId: "i" };
    const desk = new QuestionDesk({
      seats,
      ledgerDir: tempDir("registry-q-ledger"),
      link,
      logger: silentLogger,
      harnesses: [...HARNESSES, lab],
    });
    closers.push(() => desk.close());
    await desk.sync();
    expect(desk.watching("lab-q")).toBe(true);
    expect(await desk.answer("lab-q", seat.occupantId, "r-1", { q: { answers: ["a"] } })).toMatchObject({
      result: "not_sent",
    });
    expect(answered).toEqual(["r-1"]);
    expect(await desk.reconcile("lab-q", seat.occupantId, "r-1")).toMatchObject({ reason: "no_claim" });
  });
});
