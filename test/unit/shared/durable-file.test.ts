/**
 * Rule 14 (persist before the uncertain boundary: temp + fsync + rename + directory fsync) and
 * issue 17 item 2 (the agent's durable write without FileHandles): the async durable write
 * leaves exactly the content (multi-byte text included: bytes, not characters, are written),
 * with the requested mode and no temp file behind; a failed open writes nothing.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { writeFileDurablyAsync } from "../../../shared/durable-file.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("writeFileDurablyAsync (rule 14; issue 17 item 2)", () => {
  it("rule 14: writes the whole text, bytes not characters, mode 0600, and leaves no temp file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-"));
    dirs.push(dir);
    const text = `{"text":"${"héllo wörld ✓ 🚀 ".repeat(5000)}"}`;
    await writeFileDurablyAsync(join(dir, "a.json"), text);
    expect(readFileSync(join(dir, "a.json"), "utf8")).toBe(text);
    expect(statSync(join(dir, "a.json")).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(["a.json"]);
  });

  it("rule 14: replaces an existing file whole (rename), and a missing directory fails before anything is written", async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-"));
    dirs.push(dir);
    await writeFileDurablyAsync(join(dir, "a.json"), "first");
    await writeFileDurablyAsync(join(dir, "a.json"), "second");
    expect(readFileSync(join(dir, "a.json"), "utf8")).toBe("second");
    await expect(writeFileDurablyAsync(join(dir, "missing", "b.json"), "x")).rejects.toThrow(/ENOENT/);
    expect(readdirSync(dir)).toEqual(["a.json"]);
  });
});
