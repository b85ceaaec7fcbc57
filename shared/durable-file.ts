/** Crash-safe file writes: temp file, fsync, rename, then fsync the directory. */
import { close, closeSync, fsync, fsyncSync, open, openSync, rename, renameSync, write, writeSync } from "node:fs";
import { promisify } from "node:util";
import { dirname, join, basename } from "node:path";
import { randomBytes } from "node:crypto";

export function writeFileDurably(path: string, content: string, mode = 0o600): void {
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const fd = openSync(tmp, "wx", mode);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  const dir = openSync(dirname(path), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

// Callback fs (promisified once) rather than fs/promises' FileHandle: a FileHandle is an
// EventEmitter with close tracking, and its writeFile a chunked loop; one delivery opened two
// (issue 17's agent profile). The syscalls and their order are the same.
const openAsync = promisify(open);
const writeAsync = promisify(write);
const fsyncAsync = promisify(fsync);
const closeAsync = promisify(close);
const renameAsync = promisify(rename);

async function syncAndClose(fd: number): Promise<void> {
  try {
    await fsyncAsync(fd);
  } finally {
    await closeAsync(fd);
  }
}

// The async writer's temp names: random once per process, then a counter (no randomBytes per
// write). "wx" still refuses a name that exists, so a collision fails the write, never clobbers.
const TMP_TAG = randomBytes(6).toString("hex");
let tmpCount = 0;

/** The same, without blocking the event loop: the agent keeps answering while a write syncs. */
export async function writeFileDurablyAsync(path: string, content: string, mode = 0o600): Promise<void> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${TMP_TAG}${(++tmpCount).toString(36)}.tmp`);
  const bytes = Buffer.from(content, "utf8");
  const fd = await openAsync(tmp, "wx", mode);
  try {
    for (let off = 0; off < bytes.length; ) off += (await writeAsync(fd, bytes, off, bytes.length - off)).bytesWritten;
  } catch (e) {
    await closeAsync(fd).catch(() => {});
    throw e;
  }
  await syncAndClose(fd);
  await renameAsync(tmp, path);
  await syncAndClose(await openAsync(dir, "r"));
}
