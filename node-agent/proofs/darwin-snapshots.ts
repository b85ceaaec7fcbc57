/**
 * Short-lived shared snapshots for the macOS provider (issue 15): one `ps` process table and
 * one `lsof` socket table serve every fact asked for while they are young, so a whole pane
 * proof forks about four commands instead of one or two per fact (bench/proof-sources.ts).
 * A snapshot is stamped when its command was STARTED, the earliest instant any line in it can
 * describe, so a fact read from it is at least as old as the freshness gate counts it, never
 * younger. A failed read is never kept: the next reader forks again, and until one succeeds
 * the facts are `unknown`, never the last good answer.
 */
import type { MonotonicClock } from "./proof.js";
import { FRESHNESS_LIMIT_MS } from "./freshness.js";
import type { CommandRunner } from "./run-command.js";
import type { UnknownReason } from "./provider.js";
import { parseLsof, parsePsTable, type LsofFile, type PsRow } from "./darwin-parse.js";

export type Failure = { reason: UnknownReason; detail: string };
export const isFailure = (x: unknown): x is Failure =>
  typeof x === "object" && x !== null && "reason" in x && "detail" in x && !("pid" in x) && !("value" in x);

export interface Snapshot<T> {
  value: T;
  /** When the command was started (the fact's stamp). */
  startedAtMs: number;
  /** When its whole answer had been read. */
  finishedAtMs: number;
}

/**
 * How long after it FINISHED a snapshot may answer another fact, so reuse adds at most this to
 * a fact beyond its own read (a whole read, however slow the host, is what a pane proof's next
 * fact wants: its listener check reuses the table its connection check just read). An in-flight
 * read is shared while it started at most this long ago.
 */
export const SNAPSHOT_REUSE_MS = 125;
/**
 * A snapshot started this long ago is never handed out again, however recently it finished: it
 * is past the freshness gate's limit (freshness.ts), so a re-read after a `proof_stale` verdict
 * never gets the table it was refused on.
 */
export const SNAPSHOT_MAX_AGE_MS = FRESHNESS_LIMIT_MS;

/**
 * One command's parsed answer, kept while young. Bounded: at most one command of a source runs
 * at a time; callers that cannot use the running read (it began before their question) share
 * the one read queued to start when it ends, so a burst of questions forks two commands, not one each.
 */
export class SnapshotSource<T> {
  private last: Snapshot<T> | undefined;
  private pending: { startedAtMs: number; promise: Promise<Snapshot<T> | Failure> } | undefined;
  private queued: Promise<Snapshot<T> | Failure> | undefined;
  /** Commands started, for the bench and the tests that count forks. */
  started = 0;

  constructor(
    private readonly clock: MonotonicClock,
    private readonly read: () => Promise<T | Failure>,
    private readonly reuseMs: number = SNAPSHOT_REUSE_MS,
  ) {}

  /**
   * A snapshot that finished at most `reuseMs` ago, started under SNAPSHOT_MAX_AGE_MS ago and
   * strictly after `startedAfterMs`, else a new read: a check that must follow another read (a
   * pid's lifetime after its sockets were read) passes that read's finish, so a pid reused in
   * between shows another start time; a fact that must postdate its question passes its time.
   */
  get(startedAfterMs = -Infinity): Promise<Snapshot<T> | Failure> {
    const now = this.clock.nowMs();
    const last = this.last;
    if (
      last &&
      last.startedAtMs > startedAfterMs &&
      now - last.finishedAtMs <= this.reuseMs &&
      now - last.startedAtMs < SNAPSHOT_MAX_AGE_MS
    )
      return Promise.resolve(last);
    const pending = this.pending;
    if (!pending) return this.start();
    if (pending.startedAtMs > startedAfterMs && now - pending.startedAtMs <= this.reuseMs) return pending.promise;
    // The queued read starts after the running one ends, so after every waiting caller asked.
    this.queued ??= pending.promise.then(() => {
      this.queued = undefined;
      return this.start();
    });
    return this.queued;
  }

  private start(): Promise<Snapshot<T> | Failure> {
    const startedAtMs = this.clock.nowMs();
    this.started++;
    const promise = this.read().then(
      (value): Snapshot<T> | Failure => {
        if (isFailure(value)) return value;
        const snap = { value, startedAtMs, finishedAtMs: this.clock.nowMs() };
        if (!this.last || this.last.startedAtMs <= startedAtMs) this.last = snap;
        return snap;
      },
      (e: unknown): Failure => ({ reason: "race", detail: `the read failed: ${(e as Error).message}` }),
    );
    const entry = { startedAtMs, promise };
    this.pending = entry;
    void promise.then(() => {
      if (this.pending === entry) this.pending = undefined;
    });
    return promise;
  }
}

const PS_FIELDS = "pid=,ppid=,pgid=,tpgid=,uid=,tty=,stat=,lstart=,comm=";
export const PS_ARGS = ["-axww", "-o", PS_FIELDS] as const;
/**
 * Every TCP and every unix-domain socket of every process this user may see, in one lsof scan:
 * a connection's holders need the whole table anyway (only it shows no one else holds the other
 * end), and a process's listeners are then a filter of the same answer, not a second scan.
 * `-O` was measured to save 2-12 ms of the scan here and is not used: it makes lsof do stat()s
 * itself, which can block for good on a hung mount, where lsof's own child has a timeout.
 */
export const LSOF_SOCKETS_ARGS = ["-nP", "-w", "-iTCP", "-U", "-F", "pftnT"] as const;

export function processTable(run: CommandRunner): () => Promise<Map<number, PsRow> | Failure> {
  return async () => {
    const r = await run("ps", PS_ARGS);
    if (r.isMissing) return { reason: "unsupported", detail: "ps is not installed" };
    const table = r.code === 0 ? parsePsTable(r.stdout) : undefined;
    return table ?? { reason: "unsupported", detail: `ps output was not in the expected form (exit ${r.code})` };
  };
}

export function socketTable(run: CommandRunner): () => Promise<LsofFile[] | Failure> {
  return async () => {
    const r = await run("lsof", LSOF_SOCKETS_ARGS);
    if (r.isMissing) return { reason: "unsupported", detail: "lsof is not installed" };
    // lsof exits 1 when it selected nothing; that is an empty table only if the output is empty too.
    const files = r.code === 0 || (r.code === 1 && r.stdout.trim() === "") ? parseLsof(r.stdout) : undefined;
    return (
      files ?? {
        reason: "unsupported",
        detail: `lsof output was not in the expected form (exit ${r.code}): ${r.stderr.trim().slice(0, 120)}`,
      }
    );
  };
}
