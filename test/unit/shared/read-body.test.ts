/**
 * Bounds before authentication (issue 11, ADR 0030): a request body is read up to its limit and
 * never held past it, on the controller's HTTP/1 endpoints and the agent's HTTP/2 calls alike.
 */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { readBodyBounded, type BodySource } from "../../../shared/read-body.js";

const source = (headers: Record<string, string> = {}): PassThrough & BodySource =>
  Object.assign(new PassThrough(), { headers });

describe("shared/read-body.readBodyBounded", () => {
  it("a body within the limit is read whole, one chunk or many", async () => {
    const one = source();
    const r1 = readBodyBounded(one, 10);
    one.end(Buffer.from("hello"));
    expect(await r1).toEqual({ kind: "ok", bytes: Buffer.from("hello") });
    const many = source();
    const r2 = readBodyBounded(many, 10);
    many.write("ab");
    many.write("cd");
    many.end("e");
    expect(await r2).toEqual({ kind: "ok", bytes: Buffer.from("abcde") });
  });

  it("a declared length over the limit is refused before a byte is read", async () => {
    expect(await readBodyBounded(source({ "content-length": "11" }), 10)).toEqual({ kind: "too_large" });
  });

  it("a body that grows past the limit is refused at once: paused for HTTP/1, drained for HTTP/2", async () => {
    const paused = source();
    const r1 = readBodyBounded(paused, 4);
    paused.write("12345");
    expect(await r1).toEqual({ kind: "too_large" });
    expect(paused.isPaused()).toBe(true);
    const drained = source();
    const r2 = readBodyBounded(drained, 4, "drain");
    drained.write("12345");
    expect(await r2).toEqual({ kind: "too_large" });
    expect(drained.isPaused()).toBe(false);
  });

  it("a stream closed before its end, or failed, is aborted, never a short body", async () => {
    const reset = source();
    const r1 = readBodyBounded(reset, 10);
    reset.write("par");
    reset.destroy();
    expect(await r1).toEqual({ kind: "aborted", error: undefined });
    const failed = source();
    const r2 = readBodyBounded(failed, 10);
    failed.destroy(new Error("socket hang up"));
    const r = await r2;
    expect(r.kind).toBe("aborted");
    expect(r.kind === "aborted" && r.error?.message).toBe("socket hang up");
  });
});
