/** Pi's strict JSONL framing and the link's typed outcomes, over in-memory streams. */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { JsonlSplitter, StreamPiLink } from "../../../../../node-agent/harnesses/pi/link.js";

describe("pi-link.JsonlSplitter", () => {
  it("splits on LF only: U+2028 and U+2029 inside a JSON string stay in the record", () => {
    const out: string[] = [];
    const s = new JsonlSplitter((l) => out.push(l));
    s.push('{"a":"x\u2028y\u2029z"}\r\n{"b":');
    s.push("1}\n");
    expect(out.map((l) => JSON.parse(l))).toEqual([{ a: "x\u2028y\u2029z" }, { b: 1 }]);
  });
});

describe("pi-link.StreamPiLink", () => {
  it("a response is matched to its command by our id, never by order", async () => {
    const fromPi = new PassThrough();
    const toPi = new PassThrough();
    const link = new StreamPiLink(fromPi, toPi);
    const a = link.request({ type: "get_state" }, "id-a", 5000);
    const b = link.request({ type: "get_state" }, "id-b", 5000);
    fromPi.write(
      '{"type":"response","id":"id-b","command":"get_state","success":true,"data":{"n":2}}\n{"type":"response","id":"id-a","command":"get_state","success":false,"error":"no"}\n',
    );
    expect(await b).toEqual({ kind: "ok", data: { n: 2 } });
    expect(await a).toEqual({ kind: "refused", error: "no" });
  });

  it("issue 35 item 2: Pi's echo is checked: an answer under our id for another command is lost, never the prompt's verdict", async () => {
    const fromPi = new PassThrough();
    const toPi = new PassThrough();
    const link = new StreamPiLink(fromPi, toPi);
    const deliveryId = "0b1c2d3e-0000-4000-8000-000000000001";
    const sent: string[] = [];
    toPi.on("data", (c: Buffer) => sent.push(c.toString()));
    const prompt = link.request({ type: "prompt", message: "hi" }, `clankie-${deliveryId}`, 5000);
    const state = link.request({ type: "get_state" }, "s1", 5000);
    // The delivery id is the command id Pi echoes.
    await new Promise((r) => setImmediate(r));
    expect(JSON.parse(sent[0]!)).toMatchObject({ type: "prompt", id: `clankie-${deliveryId}` });
    fromPi.write(
      `{"type":"response","id":"clankie-${deliveryId}","command":"steer","success":true}\n{"type":"response","id":"s1","success":true,"data":{}}\n`,
    );
    expect(await prompt).toEqual({
      kind: "lost",
      detail: `the response under id clankie-${deliveryId} echoed command "steer", not prompt`,
    });
    expect((await state).kind).toBe("lost");
  });

  it("a link that closes after the write turns the pending command into lost, and later ones into not_sent", async () => {
    const fromPi = new PassThrough();
    const link = new StreamPiLink(fromPi, new PassThrough());
    const pending = link.request({ type: "prompt" }, "p1", 5000);
    fromPi.end();
    expect((await pending).kind).toBe("lost");
    expect((await link.request({ type: "prompt" }, "p2", 5000)).kind).toBe("not_sent");
  });
});
