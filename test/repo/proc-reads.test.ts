/**
 * Issue 15: every process and socket fact goes through the ProofProvider. Only the Linux
 * provider's own files (node-agent/proofs/linux*.ts) may read /proc; any other source file
 * naming a /proc path in code fails here, so macOS and Windows seats cannot silently depend
 * on Linux. Comments may mention /proc.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const ALLOWED = /^node-agent\/proofs\/linux[^/]*\.ts$/;

function sources(): string[] {
  return ["shared", "controller", "node-agent", "cli", "bridge", "worker"].flatMap((d) =>
    readdirSync(join(ROOT, d), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".ts"))
      .map((f) => join(d, f)),
  );
}

/** The code of a file with its comments removed (line and block), so only real reads count. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}

export function procReaders(files: { path: string; text: string }[]): string[] {
  return files.filter((f) => !ALLOWED.test(f.path) && /["'`]\/proc(\/|["'`$])/.test(code(f.text))).map((f) => f.path);
}

describe("process facts only through the ProofProvider", () => {
  it("no source file outside node-agent/proofs/linux*.ts reads /proc", () => {
    const files = sources().map((path) => ({ path, text: readFileSync(join(ROOT, path), "utf8") }));
    expect(procReaders(files)).toEqual([]);
  });

  it("the check itself catches a read in another file and ignores comments and the allowed files", () => {
    expect(
      procReaders([{ path: "node-agent/panes/x.ts", text: 'readFileSync(`/proc/${pid}/stat`, "utf8");' }]),
    ).toEqual(["node-agent/panes/x.ts"]);
    expect(procReaders([{ path: "node-agent/panes/y.ts", text: 'readdirSync("/proc")' }])).toEqual([
      "node-agent/panes/y.ts",
    ]);
    expect(
      procReaders([{ path: "node-agent/panes/z.ts", text: "// reads /proc/PID/stat\n/** from /proc */ const a = 1;" }]),
    ).toEqual([]);
    expect(procReaders([{ path: "node-agent/proofs/linux-read.ts", text: 'readdirSync("/proc")' }])).toEqual([]);
  });
});
