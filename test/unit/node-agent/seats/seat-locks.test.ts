/** One operation per seat at a time in the agent (a delivery's gate and write never interleave with an inspect); other seats run in parallel. */
import { describe, expect, it } from "vitest";
import { SeatLocks } from "../../../../node-agent/seats/seat-locks.js";

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("seat-locks.SeatLocks", () => {
  it("runs one operation per seat at a time, in arrival order, and other seats alongside", async () => {
    const locks = new SeatLocks();
    const log: string[] = [];
    const op = (name: string, ms: number) => async () => {
      log.push(`${name}:start`);
      await tick(ms);
      log.push(`${name}:end`);
      return name;
    };
    const results = await Promise.all([
      locks.run("a", op("a1", 30)),
      locks.run("a", op("a2", 1)),
      locks.run("b", op("b1", 5)),
    ]);
    expect(results).toEqual(["a1", "a2", "b1"]);
    expect(log.indexOf("a1:end")).toBeLessThan(log.indexOf("a2:start"));
    expect(log.indexOf("b1:start")).toBeLessThan(log.indexOf("a1:end"));
  });

  it("a failed operation releases the seat for the next one and still rejects its own caller", async () => {
    const locks = new SeatLocks();
    await expect(locks.run("a", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await locks.run("a", async () => "next")).toBe("next");
  });
});
