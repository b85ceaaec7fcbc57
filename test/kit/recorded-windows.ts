/**
 * A WindowsChannel that answers from recorded files (test/fixtures/proofs/windows): the seam
 * the Windows provider reads through, so the provider's code runs unchanged on what the
 * PowerShell host would answer. No Windows machine is available here; the files follow the
 * documented ConvertTo-Json shapes of Win32_Process and Get-NetTCPConnection, and the host's
 * own `detail` record (windows-host-script.ts).
 */
import { readFileSync } from "node:fs";
import type { HostAnswer, WindowsChannel, WindowsQuery } from "../../node-agent/proofs/windows-host.js";

export const windowsFixture = (name: string) =>
  readFileSync(new URL(`../fixtures/proofs/windows/${name}`, import.meta.url), "utf8");

export interface RecordedWindows {
  processes?: string;
  /** Listening rows, by the pid asked about (absent: none). */
  listen?: Record<number, string>;
  established?: string;
  /** PEB detail records, by pid (absent: the process is gone). */
  detail?: Record<number, string>;
}

export function recordedWindows(files: RecordedWindows): WindowsChannel & { asked: WindowsQuery[] } {
  const asked: WindowsQuery[] = [];
  const answer = (name: string | undefined, fallback: string): HostAnswer => ({
    ok: true,
    data: name ? windowsFixture(name) : fallback,
  });
  const channel = async (q: WindowsQuery): Promise<HostAnswer> => {
    asked.push(q);
    if (q.op === "processes") return answer(files.processes ?? "host-processes.json", "[]");
    if (q.op === "tcp" && q.state === "Listen")
      return answer(q.pid === undefined ? undefined : files.listen?.[q.pid], "[]");
    if (q.op === "tcp") return answer(files.established ?? "host-established.json", "[]");
    return answer(
      files.detail?.[q.pid],
      JSON.stringify({ ProcessId: q.pid, Error: "gone", Message: "OpenProcess failed with 87" }),
    );
  };
  return Object.assign(channel, { asked });
}

/** A FILETIME string's µs since 1970, as the provider keeps start times. */
export const microsOf = (iso: string) => Date.parse(iso) * 1000 + Number(/\.\d{3}(\d{3})/.exec(iso)?.[1] ?? "0");
