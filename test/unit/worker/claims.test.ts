/** One exclusive claim per pane (rule 48): taken once, released only by its own delivery, unreadable refuses all. */
import { describe, expect, it } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PaneClaims } from "../../../worker/claims.js";
import { tempDir } from "../../kit/test-db.js";

const claim = (deliveryId: string, text = "report") => ({ deliveryId, seatId: "box/codex-0", binding: "b", text });

describe("PaneClaims", () => {
  it("a pane's claim is exclusive: a second take fails while the first is held, and succeeds once it was released", () => {
    const claims = new PaneClaims(join(tempDir("claims"), "c"));
    const first = claims.take("codex-0", claim("11111111-1111-4111-8111-111111111111"));
    expect(first).toMatchObject({
      deliveryId: "11111111-1111-4111-8111-111111111111",
      fingerprint: expect.any(String),
    });
    expect(claims.take("codex-0", claim("22222222-2222-4222-8222-222222222222", "other"))).toBe(false);
    // Another pane is not fenced by it.
    expect(claims.take("codex-1", claim("33333333-3333-4333-8333-333333333333"))).not.toBe(false);
    claims.release("codex-0", "11111111-1111-4111-8111-111111111111");
    expect(claims.read("codex-0")).toEqual({ kind: "none" });
    expect(claims.take("codex-0", claim("22222222-2222-4222-8222-222222222222", "other"))).not.toBe(false);
  });

  it("only the claim's own delivery releases it", () => {
    const claims = new PaneClaims(join(tempDir("claims"), "c"));
    claims.take("codex-0", claim("11111111-1111-4111-8111-111111111111"));
    claims.release("codex-0", "99999999-9999-4999-8999-999999999999");
    expect(claims.read("codex-0")).toMatchObject({
      kind: "held",
      claim: { deliveryId: "11111111-1111-4111-8111-111111111111" },
    });
  });

  it("an unreadable claim file is reported as such (it cannot tell an original from a new message) and blocks a new claim", () => {
    const dir = join(tempDir("claims"), "c");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "codex-0.json"), "{not json");
    const claims = new PaneClaims(dir);
    expect(claims.read("codex-0")).toMatchObject({ kind: "unreadable" });
    expect(claims.take("codex-0", claim("11111111-1111-4111-8111-111111111111"))).toBe(false);
  });

  it("a seat name that is not a valid name is refused before any file is touched", () => {
    const claims = new PaneClaims(join(tempDir("claims"), "c"));
    expect(() => claims.take("../escape", claim("11111111-1111-4111-8111-111111111111"))).toThrow(/not a seat name/);
  });
});
