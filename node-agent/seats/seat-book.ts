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
  /** Seats found in panes. Kept in memory only: after a restart they are discovered and proved anew (rule 40). */
  private readonly discovered = new Map<string, SeatRecord>();
  private readonly listeners = new Set<() => void>();

  constructor(stateDir: string) {
    this.path = join(stateDir, "seats.json");
    if (existsSync(this.path)) {
      const rows = JSON.parse(readFileSync(this.path, "utf8")) as SeatRecord[];
      for (const row of rows) this.seats.set(row.name, row);
    }
  }

  get(name: string): SeatRecord | undefined {
    return this.seats.get(name) ?? this.discovered.get(name);
  }

  all(): SeatRecord[] {
    return [...this.seats.values(), ...this.discovered.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Records a seat discovered in a pane, replacing its previous occupant; false when a persisted seat owns the name. */
  putDiscovered(seat: SeatRecord): boolean {
    if (this.seats.has(seat.name)) return false;
    const before = this.discovered.get(seat.name);
    if (before && before.occupantId === seat.occupantId && before.title === seat.title) return true;
    // A new occupant replaces the whole record: its control facts never carry over.
    this.discovered.set(seat.name, seat);
    for (const l of this.listeners) l();
    return true;
  }

  removeDiscovered(name: string): void {
    if (this.discovered.delete(name)) for (const l of this.listeners) l();
  }

  discoveredSeats(): SeatRecord[] {
    return [...this.discovered.values()];
  }

  /** Adds a seat, or returns the existing one of the same name and kind. */
  add(name: string, kind: SeatKind, title: string): { seat: SeatRecord; created: boolean } {
    const existing = this.seats.get(name);
    if (this.discovered.has(name))
      throw new Error(`seat ${name} already exists as a discovered ${this.discovered.get(name)!.kind} seat`);
    if (existing) {
      if (existing.kind !== kind) throw new Error(`seat ${name} already exists as a ${existing.kind} seat`);
      return { seat: existing, created: false };
    }
    const seat: SeatRecord = {
      name,
      kind,
      title,
      occupantId: `${kind}:${name}:${randomUUID()}`,
      createdAtMs: Date.now(),
    };
    this.seats.set(name, seat);
    writeFileDurably(
      this.path,
      JSON.stringify(
        [...this.seats.values()].sort((a, b) => a.name.localeCompare(b.name)),
        null,
        2,
      ),
    );
    for (const l of this.listeners) l();
    return { seat, created: true };
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
