/**
 * Issue 34 item 5: `pool_mode` in the journal's URL declares a pooler; the controller reads it
 * and postgres.js never sees it (it would send it to pgbouncer as a startup parameter, refused).
 */
import { describe, expect, it } from "vitest";
import { poolerTarget, setLocalTimeouts } from "../../../../controller/db/pooled-client.js";

describe("issue 34 item 5: pool_mode in the database URL", () => {
  it("is taken out of the URL, the other parameters kept", () => {
    expect(poolerTarget("postgres://u@pgb:6432/clankie?pool_mode=transaction&sslmode=require")).toEqual({
      url: "postgres://u@pgb:6432/clankie?sslmode=require",
      poolMode: "transaction",
    });
    expect(poolerTarget("postgres://u@h1,h2/clankie?target_session_attrs=read-write&pool_mode=session")).toEqual({
      url: "postgres://u@h1,h2/clankie?target_session_attrs=read-write",
      poolMode: "session",
    });
    expect(poolerTarget("postgres://u@pgb:6432/clankie?pool_mode=transaction")).toEqual({
      url: "postgres://u@pgb:6432/clankie",
      poolMode: "transaction",
    });
  });

  it("without it the URL is left as given: a direct connection", () => {
    expect(poolerTarget("postgres://u@db:5432/clankie?sslmode=require")).toEqual({
      url: "postgres://u@db:5432/clankie?sslmode=require",
      poolMode: undefined,
    });
  });

  it("an unknown mode is the operator's invalid argument, not a silent default", () => {
    expect(() => poolerTarget("postgres://u@pgb/clankie?pool_mode=statement")).toThrow(
      /pool_mode must be transaction or session/,
    );
  });

  it("the timeouts are set for the transaction only (is_local true)", () => {
    expect(setLocalTimeouts({ lockTimeoutMs: 2000, statementTimeoutMs: 5000, idleInTransactionMs: 10000 })).toBe(
      "select set_config('lock_timeout', '2000', true), set_config('statement_timeout', '5000', true), set_config('idle_in_transaction_session_timeout', '10000', true)",
    );
  });
});
