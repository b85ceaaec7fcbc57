import { describe, expect, it } from "vitest";
import { SeatTurns } from "../../../../controller/delivery/seat-turns.js";

describe("seat-turns.SeatTurns", () => {
  it("one delivery per seat at a time: a later message waits for the one in flight (rule 25)", async () => {
    const turns = new SeatTurns();
    const order: string[] = [];
    const first = await turns.take("s");
    const second = turns.take("s").then((t) => {
      order.push("second");
      t.release();
    });
    await new Promise((r) => setTimeout(r, 20));
    order.push("first done");
    first.release();
    await second;
    expect(order).toEqual(["first done", "second"]);
  });
  it("other seats do not wait", async () => {
    const turns = new SeatTurns();
    const a = await turns.take("a");
    const b = await turns.take("b");
    expect(b.timedOut).toBe(false);
    a.release();
    b.release();
  });
  it("the wait is bounded: after the limit the later message goes on to the ordinary checks", async () => {
    const turns = new SeatTurns();
    await turns.take("s");
    const late = await turns.take("s", 30);
    expect(late.timedOut).toBe(true);
    late.release();
  });
});
