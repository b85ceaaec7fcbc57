/**
 * The host journal of hires (rule 53): one small file per hire id under the agent's state
 * dir, written durably (temp + fsync + rename + dir fsync) before each boundary, so a
 * restarted agent still knows an id was reserved, sealed, committed to a launch, or
 * finished with an answer. An id that reached launch_committed is never launched again.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, writeSync } from "node:fs";
import { join } from "node:path";
import { isUuid } from "../../shared/ids.js";

export type HostHireState = "reserved" | "sealed" | "launch_committed" | "finished";

/** The agent's answer, as recorded (HireSeatResponse fields in plain JSON). */
export interface RecordedAnswer {
  outcome: "spawned" | "failed";
  reason: string;
  detail: string;
  seatName?: string | undefined;
  paneId?: string | undefined;
  briefMechanism?: string | undefined;
  briefDeliveryId?: string | undefined;
  controlReason?: string | undefined;
  controlFix?: string | undefined;
  launchCommitted: boolean;
  paneClosed?: boolean | undefined;
  proofs?: { kind: string; outcome: string; detail: string; ageAtWriteMs: number }[] | undefined;
  seat?:
    | {
        name: string;
        kind: string;
        status: string;
        occupantId: string;
        title: string;
        inputCapabilities: { deliveryModes: ("steer" | "queue")[]; interrupt: boolean; nextTurnOnly: boolean };
      }
    | undefined;
}

/** A Codex app-server the agent itself started for a hire (Herdr: codex-herdr-server.ts): its exact lifetime. */
export interface RecordedCodexServer {
  pid: number;
  startTime: number;
  socketPath: string;
  /** Its process group (the agent starts it detached; the binary may be a wrapper leading the group). */
  pgid?: number | undefined;
  /** Set once the agent saw it gone or stopped it (codex-server-keeper.ts). */
  stoppedAtMs?: number | undefined;
}

export interface HostHireRecord {
  hireId: string;
  fingerprint: string;
  state: HostHireState;
  harness?: string | undefined;
  reservedAtMs: number;
  committedAtMs?: number | undefined;
  paneId?: string | undefined;
  /** The pane host session the pane was opened in. */
  session?: string | undefined;
  answer?: RecordedAnswer | undefined;
  /** Written before the pane opens; the only source of the private_app_server proof's Herdr form. */
  codexServer?: RecordedCodexServer | undefined;
}

export class HostJournal {
  readonly dir: string;

  constructor(stateDir: string) {
    this.dir = join(stateDir, "hires");
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  private path(id: string): string {
    if (!isUuid(id)) throw new Error(`hire id ${JSON.stringify(id)} is not a uuid`);
    return join(this.dir, `${id.toLowerCase()}.json`);
  }

  /** The record, undefined when absent; throws when it exists but cannot be read (never "absent"). */
  read(id: string): HostHireRecord | undefined {
    let text: string;
    try {
      text = readFileSync(this.path(id), "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw e;
    }
    return JSON.parse(text) as HostHireRecord;
  }

  write(rec: HostHireRecord): void {
    const final = this.path(rec.hireId);
    const tmp = `${final}.${process.pid}.tmp`;
    const fd = openSync(tmp, "w", 0o600);
    try {
      writeSync(fd, JSON.stringify(rec));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, final);
    const dirFd = openSync(this.dir, "r");
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  }

  /** The hire that recorded this pane (a Herdr-launched process carries no hire marker); the latest one. */
  byPane(paneId: string): HostHireRecord | undefined {
    return this.all()
      .filter((r) => r.paneId === paneId)
      .sort((a, b) => b.reservedAtMs - a.reservedAtMs)[0];
  }

  all(): HostHireRecord[] {
    const out: HostHireRecord[] = [];
    for (const f of readdirSync(this.dir)) {
      if (!f.endsWith(".json")) continue;
      try {
        out.push(JSON.parse(readFileSync(join(this.dir, f), "utf8")) as HostHireRecord);
      } catch {
        // A torn file cannot be a finished hire; the id's own reads will throw on it.
      }
    }
    return out;
  }
}
