/**
 * Rule 14 (persist before the uncertain boundary: temp + fsync + rename + directory fsync) and
 * issue 17 item 2 (the agent's durable write without FileHandles): the async durable write
 * leaves exactly the content (multi-byte text included: bytes, not characters, are written),
 * with the requested mode and no temp file behind; a failed open writes nothing, a failed rename
 * leaves no temp file; and only the create and the two syncs leave the event loop for a body up
 * to SYNC_WRITE_MAX (counted as the threadpool requests the write makes).
 */
import { createHook } from "node:async_hooks";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SYNC_WRITE_MAX, writeFileDurablyAsync } from "../../../shared/durable-file.js";

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

  it("issue 17 item 2: a small body costs three threadpool requests (the create, the file's and the directory's fsync), a large one more", async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-"));
    dirs.push(dir);
    const requests = async (text: string, name: string) => {
      let n = 0;
      const hook = createHook({ init: (_id, type) => void (type === "FSREQCALLBACK" && n++) }).enable();
      try {
        await writeFileDurablyAsync(join(dir, name), text);
      } finally {
        hook.disable();
      }
      expect(readFileSync(join(dir, name), "utf8")).toBe(text);
      return n;
    };
    expect(await requests("x".repeat(SYNC_WRITE_MAX), "small.json")).toBe(3);
    expect(await requests("x".repeat(SYNC_WRITE_MAX + 1), "large.json")).toBeGreaterThan(3);
  });

  it("rule 14: a rename that fails removes the temp file and writes nothing in its place", async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-"));
    dirs.push(dir);
    mkdirSync(join(dir, "taken"));
    writeFileSync(join(dir, "taken", "inside"), "kept");
    await expect(writeFileDurablyAsync(join(dir, "taken"), "x")).rejects.toThrow(/EISDIR|ENOTEMPTY|EEXIST/);
    expect(readdirSync(dir)).toEqual(["taken"]);
    expect(readFileSync(join(dir, "taken", "inside"), "utf8")).toBe("kept");
  });
});
