/**
 * One RPC error boundary (shared/rpc/error-boundary.ts): FleetErrors keep their code, and
 * whatever else escapes a service is scrubbed, so a driver's "Failed query: … params: …"
 * never reaches a caller (issue 11: a NUL byte in a seat name answered with the SQL).
 */
import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { fleetErrorBoundary } from "../../../shared/rpc/error-boundary.js";
import { JournalUnavailableError } from "../../../shared/errors.js";

const SQL = 'Failed query: select "id", "name" from "seats" where "seats"."name" = $1\nparams: secret\u0000';

async function thrownBy(e: unknown): Promise<ConnectError> {
  const call = fleetErrorBoundary()(async () => {
    throw e;
  });
  try {
    await call({} as never);
  } catch (err) {
    return err as ConnectError;
  }
  throw new Error("the boundary swallowed the error");
}

describe("the RPC error boundary", () => {
  it("maps a FleetError to its code", async () => {
    const e = await thrownBy(new JournalUnavailableError("the journal is down"));
    expect(e).toBeInstanceOf(ConnectError);
    expect(e.code).toBe(Code.Unavailable);
    expect(e.rawMessage).toBe("journal_unavailable: the journal is down");
  });

  it("types a plain error carrying SQL as internal and scrubs its text", async () => {
    const e = await thrownBy(new Error(SQL));
    expect(e.code).toBe(Code.Internal);
    expect(e.rawMessage).not.toMatch(/select|seats|params|secret/i);
  });

  it("scrubs a FleetError whose message carries SQL", async () => {
    const e = await thrownBy(new JournalUnavailableError(SQL));
    expect(e.code).toBe(Code.Unavailable);
    expect(e.rawMessage).not.toMatch(/select|seats|params|secret/i);
  });

  it("keeps a ConnectError's code but scrubs its message; a clean one passes unchanged", async () => {
    const dirty = await thrownBy(new ConnectError(SQL, Code.ResourceExhausted));
    expect(dirty.code).toBe(Code.ResourceExhausted);
    expect(dirty.rawMessage).not.toMatch(/select|seats|params|secret/i);
    const clean = new ConnectError("message larger than configured limit", Code.ResourceExhausted);
    expect(await thrownBy(clean)).toBe(clean);
  });
});
