/**
 * Rule 55 (controller/nodes/liveness.ts): a Deliver call waiting on a machine that went offline
 * ends with a MachineOfflineError, a call that answered costs the journal nothing, the parent
 * (shutdown) signal still ends every call, and the calls of one machine share one abort (issue
 * 17: no AbortSignal.any per delivery) without an ended call or another machine being touched.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Liveness, MachineOfflineError } from "../../../../controller/nodes/liveness.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function fakeRegistry() {
  const online = new Map<string, boolean>();
  let reads = 0;
  return {
    online,
    reads: () => reads,
    registry: {
      async machine(name: string) {
        reads++;
        return { name, lastSeenAt: new Date() } as never;
      },
      isOnline(m: { name?: string }) {
        return online.get((m as { name: string }).name) ?? true;
      },
    },
  };
}

let live: Liveness | undefined;
afterEach(() => live?.close());

describe("Liveness", () => {
  it("aborts the calls waiting on a machine that went offline, with MachineOfflineError; not another machine's", async () => {
    const f = fakeRegistry();
    live = new Liveness(f.registry as never, 20);
    const a1 = live.watch("a");
    const a2 = live.watch("a");
    const b = live.watch("b");
    f.online.set("a", false);
    await sleep(80);
    expect(a1.signal.aborted && a2.signal.aborted).toBe(true);
    expect(a1.signal.reason).toBeInstanceOf(MachineOfflineError);
    expect((a1.signal.reason as MachineOfflineError).machine).toBe("a");
    expect(b.signal.aborted).toBe(false);
    // A call started after the abort waits on a fresh signal.
    f.online.set("a", true);
    const a3 = live.watch("a");
    expect(a3.signal.aborted).toBe(false);
    a3.done();
    b.done();
  });

  it("reads nothing for calls that ended within a check interval, and reuses one signal per machine", async () => {
    const f = fakeRegistry();
    live = new Liveness(f.registry as never, 30);
    const first = live.watch("a");
    first.done();
    const second = live.watch("a");
    expect(second.signal).toBe(first.signal);
    second.done();
    await sleep(100);
    expect(f.reads()).toBe(0);
  });

  it("an ended call is not a waiting one: a machine with only ended calls is not read", async () => {
    const f = fakeRegistry();
    live = new Liveness(f.registry as never, 20);
    live.watch("a").done();
    f.online.set("a", false);
    await sleep(80);
    expect(f.reads()).toBe(0);
  });

  it("the parent signal ends the call, with the parent's reason", () => {
    const f = fakeRegistry();
    live = new Liveness(f.registry as never, 1_000);
    const shutdown = new AbortController();
    const w = live.watch("a", shutdown.signal);
    shutdown.abort(new Error("stopping"));
    expect(w.signal.aborted).toBe(true);
    expect((w.signal.reason as Error).message).toBe("stopping");
    w.done();
  });

  it("a call with another parent than its machine's waiting calls gets its own signal, still ended by offline", async () => {
    const f = fakeRegistry();
    live = new Liveness(f.registry as never, 20);
    const p1 = new AbortController();
    const p2 = new AbortController();
    const x = live.watch("a", p1.signal);
    const y = live.watch("a", p2.signal);
    expect(y.signal).not.toBe(x.signal);
    p2.abort(new Error("only y"));
    expect(y.signal.aborted).toBe(true);
    expect(x.signal.aborted).toBe(false);
    f.online.set("a", false);
    await sleep(80);
    expect(x.signal.reason).toBeInstanceOf(MachineOfflineError);
  });
});
