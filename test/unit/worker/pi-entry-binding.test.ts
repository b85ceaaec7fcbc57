/**
 * Rule 42 (issue 16): the extension learns Pi's exact session entry id for a delivered user
 * message by the object Pi appends, never by its text (rule 30). Driven here with the entry
 * shapes Pi 0.73's SessionManager appends (session-format.md); the real Pi is test/harnesses/pi-fence.test.ts.
 */
import { describe, expect, it } from "vitest";
import { type PiSessionEntryLike, piUserText } from "../../../node-agent/harnesses/pi/session-entry.js";
import { type EntryBound, PiEntryBinder } from "../../../worker/pi-entry-binding.js";

/** Runs each scheduled look at once, so a test steps Pi's appends between looks. */
function binder(tries = 5) {
  const bound: EntryBound[] = [];
  const queue: (() => void)[] = [];
  const b = new PiEntryBinder(
    (x) => bound.push(x),
    (f) => queue.push(f),
    tries,
  );
  const step = () => queue.splice(0).forEach((f) => f());
  return { b, bound, step };
}
const user = (text: string) => ({ role: "user", content: [{ type: "text", text }], timestamp: 1 });

describe("rule 42: PiEntryBinder", () => {
  it("binds our delivery id to the entry Pi appends for that very message object, once Pi has appended it", () => {
    const { b, bound, step } = binder();
    const entries: PiSessionEntryLike[] = [];
    const msg = user("hello");
    b.expect("d1", "hello");
    b.onMessageEnd(msg, () => entries);
    step();
    expect(bound).toEqual([]);
    entries.push({ type: "message", id: "a1b2c3d4", message: msg });
    step();
    expect(bound).toEqual([{ deliveryId: "d1", entryId: "a1b2c3d4" }]);
  });

  it("rule 30: an entry with the same text but another message object (someone typed it) is never bound", () => {
    const { b, bound, step } = binder(3);
    const ours = user("same words");
    const entries: PiSessionEntryLike[] = [{ type: "message", id: "deadbeef", message: user("same words") }];
    b.expect("d1", "same words");
    b.onMessageEnd(ours, () => entries);
    for (let i = 0; i < 5; i++) step();
    expect(bound).toEqual([]);
  });

  it("a user message no prompt of ours expects (typed by the owner) binds nothing", () => {
    const { b, bound, step } = binder();
    const typed = user("typed");
    b.onMessageEnd(typed, () => [{ type: "message", id: "11111111", message: typed }]);
    step();
    expect(bound).toEqual([]);
  });

  it("two deliveries with the same text bind in Pi's order, each to its own entry; a forgotten one binds nothing", () => {
    const { b, bound, step } = binder();
    const first = user("twice");
    const second = user("twice");
    b.expect("gone", "never started");
    b.forget("gone");
    b.expect("d1", "twice");
    b.expect("d2", "twice");
    const entries: PiSessionEntryLike[] = [
      { type: "message", id: "00000001", message: first },
      { type: "message", id: "00000002", message: second },
    ];
    b.onMessageEnd(first, () => entries);
    b.onMessageEnd(second, () => entries);
    b.onMessageEnd(user("never started"), () => entries);
    step();
    expect(bound).toEqual([
      { deliveryId: "d1", entryId: "00000001" },
      { deliveryId: "d2", entryId: "00000002" },
    ]);
  });

  it("assistant and tool results are not user messages: piUserText is undefined for them, and joins a user message's text parts", () => {
    expect(piUserText({ role: "assistant", content: [{ type: "text", text: "x" }] })).toBeUndefined();
    expect(piUserText({ role: "toolResult", content: [] })).toBeUndefined();
    expect(
      piUserText({
        role: "user",
        content: [{ type: "text", text: "a" }, { type: "image" }, { type: "text", text: "b" }],
      }),
    ).toBe("ab");
    expect(piUserText({ role: "user", content: "plain" })).toBe("plain");
  });
});
