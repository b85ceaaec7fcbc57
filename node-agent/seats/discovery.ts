/**
 * Seat discovery: a seat is a pane whose foreground processes a registered adapter
 * recognises (every adapter's discover() is asked, in registry order). Discovered seats go
 * into the seat book, in memory, and so into what the agent reports to the controller. A
 * different occupant replaces the record whole, so capabilities and control never carry
 * over; a pane that closed or no longer runs a harness loses its seat.
 *
 * Gap-free: it subscribes to the pane host first and lists second; every event (and a
 * periodic rescan, for changes no pane event announces, such as Codex creating its thread)
 * triggers a fresh listing. Scans never overlap; one requested during a scan runs after it.
 */
import type { Logger } from "../../shared/logger.js";
import type { HarnessAdapter, SeatRecord } from "../harnesses/adapter.js";
import type { AdapterRegistry } from "../harnesses/registry.js";
import type { PaneHost, PaneProcessInfo } from "../panes/pane-host.js";
import type { SeatBook } from "./seat-book.js";

export interface SeatDiscoveryOptions {
  host: PaneHost;
  adapters: AdapterRegistry;
  seats: SeatBook;
  logger: Logger;
  /** Full rescan interval, for changes no pane event announces. */
  rescanMs?: number | undefined;
}

export type ScanReport =
  | { ok: true; seats: string[]; panes: number; unreadablePanes: string[] }
  | { ok: false; detail: string };

export interface SeatDiscovery {
  /** Runs (or joins) a scan and resolves with its report. */
  scanNow(): Promise<ScanReport>;
  close(): void;
}

function discoverers(registry: AdapterRegistry): HarnessAdapter[] {
  return registry.all().filter((a) => typeof a.discover === "function");
}

/** One pass: list panes, ask every adapter about each, and update the seat book. */
export async function scanPanes(
  host: PaneHost,
  registry: AdapterRegistry,
  seats: SeatBook,
  logger: Logger,
): Promise<ScanReport> {
  let panes;
  try {
    panes = await host.listPanes();
  } catch (e) {
    // Not knowing the panes is not "no panes": existing seats stay until a listing succeeds.
    return { ok: false, detail: `pane listing failed: ${(e as Error).message}` };
  }
  const found = new Map<string, SeatRecord>();
  const unreadable = new Set<string>();
  for (const pane of panes) {
    let processes: PaneProcessInfo;
    try {
      processes = await host.processInfo(pane.paneId);
    } catch (e) {
      unreadable.add(pane.paneId);
      logger.warn("pane process info failed", { paneId: pane.paneId, error: (e as Error).message });
      continue;
    }
    for (const adapter of discoverers(registry)) {
      let rec: SeatRecord | undefined;
      try {
        rec = await adapter.discover!(pane, processes);
      } catch (e) {
        logger.warn("seat discovery failed", { kind: adapter.kind, paneId: pane.paneId, error: (e as Error).message });
        continue;
      }
      if (!rec) continue;
      found.set(rec.name, {
        ...rec,
        pane: { host: host.kind, paneId: pane.paneId, terminalId: pane.terminalId, sessionId: pane.sessionId },
      });
      break;
    }
  }
  for (const rec of found.values()) {
    if (!seats.putDiscovered(rec)) logger.warn("discovered seat name is taken by a persisted seat", { seat: rec.name });
  }
  for (const existing of seats.discoveredSeats()) {
    if (existing.pane?.host !== host.kind || found.has(existing.name)) continue;
    if (unreadable.has(existing.pane.paneId)) continue;
    seats.removeDiscovered(existing.name);
  }
  return { ok: true, seats: [...found.keys()].sort(), panes: panes.length, unreadablePanes: [...unreadable] };
}

export async function startSeatDiscovery(o: SeatDiscoveryOptions): Promise<SeatDiscovery> {
  const rescanMs = o.rescanMs ?? 5000;
  let closed = false;
  let running: Promise<ScanReport> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;

  const runScan = (): Promise<ScanReport> => {
    if (running) {
      again = true;
      return running;
    }
    const scan = (async () => {
      let report: ScanReport;
      do {
        again = false;
        report = await scanPanes(o.host, o.adapters, o.seats, o.logger);
        if (!report.ok) o.logger.warn("seat discovery scan failed", { detail: report.detail });
      } while (again && !closed);
      return report;
    })();
    running = scan;
    void scan.finally(() => {
      running = undefined;
      // A request that arrived as the last pass was finishing still gets its own pass.
      if (again && !closed) void runScan();
    });
    return scan;
  };

  const schedule = () => {
    if (closed) return;
    timer = setTimeout(() => {
      void runScan().finally(schedule);
    }, rescanMs);
    timer.unref?.();
  };

  let unsubscribe: () => void = () => {};
  try {
    unsubscribe = await o.host.subscribe(() => {
      if (!closed) void runScan();
    });
  } catch (e) {
    // Without events the periodic rescan still finds every change, only later.
    o.logger.warn("pane host subscription failed; relying on periodic rescans", { error: (e as Error).message });
  }
  await runScan();
  schedule();

  return {
    scanNow: runScan,
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      unsubscribe();
    },
  };
}
