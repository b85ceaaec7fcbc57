/**
 * Issue 17 item 2 (on the agent, work done once instead of per call): `tokenMatcher` takes the
 * expected token's digest once and then answers exactly as `tokensEqual` does (constant-time
 * compare of digests; a missing, shorter, longer or different token is refused).
 */
import { describe, expect, it } from "vitest";
import { newToken, tokenMatcher, tokensEqual } from "../../../shared/tokens.js";

describe("tokenMatcher (issue 17 item 2)", () => {
  it("issue 17: agrees with tokensEqual on the right token and on every wrong one", () => {
    const token = newToken("agent");
    const matches = tokenMatcher(token);
    for (const presented of [
      token,
      undefined,
      "",
      token.slice(1),
      `${token}x`,
      newToken("agent"),
      token.toUpperCase(),
    ]) {
      expect(matches(presented)).toBe(tokensEqual(token, presented));
    }
    expect(matches(token)).toBe(true);
    expect(matches(`${token}x`)).toBe(false);
  });
});
