/**
 * Issue 34 item 5: the journal's URL in logs and the controller record names every host of a
 * multi-host URL (a primary and its standbys), with the password redacted — never
 * "unparseable" for a URL postgres.js accepts.
 */
import { describe, expect, it } from "vitest";
import { parseDatabaseUrl, redactDatabaseUrl, writableHostOption } from "../../../../controller/db/database-url.js";

describe("issue 34 item 5: the database URL in logs", () => {
  it("a multi-host URL with target_session_attrs=read-write shows every host and its parameters, password redacted", () => {
    const url = "postgres://clankie:s3cr%40t@db1.example:5432,db2.example:5433/clankie?target_session_attrs=read-write";
    const shown = redactDatabaseUrl(url);
    expect(shown).toBe(
      "postgres://clankie:***@db1.example:5432,db2.example:5433/clankie?target_session_attrs=read-write",
    );
    expect(shown).not.toMatch(/s3cr|unparseable/);
  });

  it("a single-host URL is shown as before, its password redacted", () => {
    expect(redactDatabaseUrl("postgres://postgres:pw@127.0.0.1:5432/clankie")).toBe(
      "postgres://postgres:***@127.0.0.1:5432/clankie",
    );
    expect(redactDatabaseUrl("postgresql://postgres@localhost/clankie")).toBe(
      "postgresql://postgres@localhost/clankie",
    );
  });

  it("a password given as a parameter, or raw with an '@' in it, is redacted too", () => {
    expect(redactDatabaseUrl("postgres://u@h1,h2/db?password=hunter2&sslmode=require")).toBe(
      "postgres://u@h1,h2/db?password=***&sslmode=require",
    );
    const raw = redactDatabaseUrl("postgres://u:p@ss@h1:1,h2:2/db");
    expect(raw).toBe("postgres://u:***@h1:1,h2:2/db");
  });

  it("something that is no postgres:// URL is not echoed (it may be only a secret)", () => {
    expect(redactDatabaseUrl("hunter2")).not.toContain("hunter2");
  });

  it("parses the hosts in the order postgres.js tries them", () => {
    expect(parseDatabaseUrl("postgres://u@[::1]:5432,127.0.0.1:5433/clankie")?.hosts).toEqual([
      "[::1]:5432",
      "127.0.0.1:5433",
    ]);
  });

  it("read-write is asked of postgres.js as primary (its read-write check lets a PostgreSQL 14+ hot standby through)", () => {
    expect(writableHostOption("postgres://u@h1,h2/db?target_session_attrs=read-write")).toEqual({
      target_session_attrs: "primary",
    });
    expect(writableHostOption("postgres://u@h1,h2/db?target_session_attrs=any")).toEqual({});
    expect(writableHostOption("postgres://u@h1/db")).toEqual({});
  });
});
