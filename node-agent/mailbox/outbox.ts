/**
 * The worker's outbox on this machine: message_clankie stores each report as one durable
 * file named by its UUID ("stored" = retained here, not yet read by any lead). The agent
 * forwards the files to the controller and removes each once the controller holds it.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { writeFileDurably } from "../../shared/durable-file.js";

export interface OutboxReport {
  schemaVersion: 1;
  id: string;
  seatName: string;
  text: string;
  createdAtMs: number;
}

export class Outbox {
  constructor(private readonly rootDir: string) {}

  put(seatName: string, text: string): OutboxReport {
    const report: OutboxReport = { schemaVersion: 1, id: randomUUID(), seatName, text, createdAtMs: Date.now() };
    mkdirSync(join(this.rootDir, seatName), { recursive: true, mode: 0o700 });
    writeFileDurably(join(this.rootDir, seatName, `${report.id}.json`), JSON.stringify(report));
    return report;
  }

  /** Every stored report, oldest first; unreadable files are left in place and named. */
  list(): { reports: OutboxReport[]; unreadable: string[] } {
    const reports: OutboxReport[] = [];
    const unreadable: string[] = [];
    if (!existsSync(this.rootDir)) return { reports, unreadable };
    for (const seat of readdirSync(this.rootDir)) {
      for (const file of readdirSync(join(this.rootDir, seat))) {
        if (!file.endsWith(".json") || file.startsWith(".")) continue;
        try {
          const r = JSON.parse(readFileSync(join(this.rootDir, seat, file), "utf8")) as OutboxReport;
          if (r.schemaVersion !== 1 || r.seatName !== seat) throw new Error("not a report");
          reports.push(r);
        } catch {
          unreadable.push(join(seat, file));
        }
      }
    }
    return { reports: reports.sort((a, b) => a.createdAtMs - b.createdAtMs), unreadable };
  }

  /** Whether the report is still waiting here (not yet accepted by the controller). */
  holds(seatName: string, id: string): boolean {
    return existsSync(join(this.rootDir, seatName, `${id}.json`));
  }

  remove(seatName: string, id: string): void {
    rmSync(join(this.rootDir, seatName, `${id}.json`), { force: true });
  }
}
