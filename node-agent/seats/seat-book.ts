/** The seats this agent hosts, persisted in its state directory so they survive restarts. */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { writeFileDurably } from "../../shared/durable-file.js";
import type { SeatKind } from "../../shared/verdicts.js";
import type { SeatRecord } from "../harnesses/adapter.js";

export class SeatBook {
  private readonly path: string;
  private seats = new Map<string, SeatRecord>();
  private readonly listeners = new Set<() => void>();

  constructor(stateDir: string) {
    this.path = join(stateDir, "seats.json");
    if (existsSync(this.path)) {
      const rows = JSON.parse(readFileSync(this.path, "utf8")) as SeatRecord[];
      for (const row of rows) this.seats.set(row.name, row);
    }
  }

  get(name: string): SeatRecord | undefined {
    return this.seats.get(name);
  }

  all(): SeatRecord[] {
    return [...this.seats.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Adds a seat, or returns the existing one of the same name and kind. */
  add(name: string, kind: SeatKind, title: string): { seat: SeatRecord; created: boolean } {
    const existing = this.seats.get(name);
    if (existing) {
      if (existing.kind !== kind) throw new Error(`seat ${name} already exists as a ${existing.kind} seat`);
      return { seat: existing, created: false };
    }
    const seat: SeatRecord = { name, kind, title, occupantId: `${kind}:${name}:${randomUUID()}`, createdAtMs: Date.now() };
    this.seats.set(name, seat);
    writeFileDurably(this.path, JSON.stringify(this.all(), null, 2));
    for (const l of this.listeners) l();
    return { seat, created: true };
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
