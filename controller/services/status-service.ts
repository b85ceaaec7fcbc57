/** StatusService: machines, seats and receipts with their ages, and a watch stream. */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EventEmitter } from "node:events";
import {
  ListMachinesResponseSchema,
  ListReceiptsResponseSchema,
  ListHiresResponseSchema,
  ListSeatsResponseSchema,
  MachineSchema,
  SeatRowSchema,
  type StatusService,
  WatchResponseSchema,
  type Machine,
  type ReceiptRow,
  type SeatRow,
} from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { CannotWorkSchema, InputCapabilitiesSchema, SeatSchema } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import {
  deliveryModeWire,
  seatKindWire,
  seatStatusWire,
  type SeatKind,
  type SeatStatus,
} from "../../shared/verdicts.js";
import type { Db } from "../db/open.js";
import { countUnresolvedBySeat, listDeliveries } from "../journal/delivery-receipts.js";
import type { Registry } from "../nodes/registry.js";
import { FleetError } from "../../shared/errors.js";
import { readFailure } from "../db/error-text.js";
import { queryReceipts, receiptDetail, receiptRow } from "./receipt-views.js";
import { revokedMachines } from "../fleet/machine-certs.js";
import { listHires } from "./hire-views.js";
import { receiptTimeline } from "./receipt-timeline.js";

export interface StatusDeps {
  db: Db;
  registry: Registry;
  now: () => Date;
  changes: EventEmitter<{ changed: [] }>;
}

export async function listMachines(d: StatusDeps): Promise<Machine[]> {
  const now = d.now().getTime();
  const [rows, revoked] = await Promise.all([d.registry.machines(), revokedMachines(d.db)]);
  return rows.map((m) =>
    create(MachineSchema, {
      name: m.name,
      online: d.registry.isOnline(m),
      platform: m.platform,
      endpoint: m.endpoint,
      capabilityVersion: m.capabilityVersion,
      lastSeenAgeMs: BigInt(Math.max(0, now - m.lastSeenAt.getTime())),
      agentVersion: m.agentVersion,
      revoked: revoked.has(m.name),
    }),
  );
}

export async function listSeats(d: StatusDeps): Promise<SeatRow[]> {
  const [machineRows, seatRows, unresolved] = await Promise.all([
    d.registry.machines(),
    d.registry.seats(),
    countUnresolvedBySeat(d.db),
  ]);
  const online = new Map(machineRows.map((m) => [m.name, d.registry.isOnline(m)]));
  return seatRows.map((s) =>
    create(SeatRowSchema, {
      id: s.id,
      machine: s.machine,
      online: online.get(s.machine) ?? false,
      unresolvedReceipts: unresolved.get(s.id) ?? 0,
      seat: create(SeatSchema, {
        name: s.name,
        kind: seatKindWire.encode(s.kind as SeatKind),
        status: seatStatusWire.encode(s.status as SeatStatus),
        occupantId: s.occupantId,
        title: s.title,
        inputCapabilities: create(InputCapabilitiesSchema, {
          deliveryModes: s.inputCapabilities.deliveryModes.map((m) => deliveryModeWire.encode(m)),
          interrupt: s.inputCapabilities.interrupt,
          nextTurnOnly: s.inputCapabilities.nextTurnOnly,
        }),
        ...(s.cannotWork ? { cannotWork: create(CannotWorkSchema, s.cannotWork) } : {}),
      }),
    }),
  );
}

export async function listReceipts(d: StatusDeps, limit: number, unresolvedOnly: boolean): Promise<ReceiptRow[]> {
  const now = d.now().getTime();
  return (await listDeliveries(d.db, { limit: Math.min(limit || 100, 1000), unresolvedOnly })).map((r) =>
    receiptRow(r, now),
  );
}

/** A read's failure as the caller sees it: the journal's is journal_unavailable (the error boundary turns it into its gRPC code). */
async function read<T>(pending: Promise<T>): Promise<T> {
  try {
    return await pending;
  } catch (e) {
    throw FleetError.from(readFailure(e));
  }
}

/** Ages move and agents go silent without any write, so the watch also refreshes on a timer. */
const WATCH_REFRESH_MS = 5000;
/** The newest hires each watch message carries: the hires view's page. */
const WATCH_HIRES = 20;

export function createStatusService(d: StatusDeps): ServiceImpl<typeof StatusService> {
  return {
    async listMachines() {
      return create(ListMachinesResponseSchema, { machines: await read(listMachines(d)) });
    },
    async listSeats() {
      return create(ListSeatsResponseSchema, { seats: await read(listSeats(d)) });
    },
    async listReceipts(req) {
      const q = { ...req, deliveryIdPrefix: req.deliveryIdPrefix };
      const page = await read(queryReceipts(d.db, q, d.now().getTime()));
      return create(ListReceiptsResponseSchema, page);
    },
    async getReceipt(req) {
      return read(receiptDetail(d.db, req.deliveryId, d.now().getTime()));
    },
    async listHires(req) {
      const q = { limit: req.limit, unresolvedOnly: req.unresolvedOnly };
      const hires = await read(listHires(d.db, q, d.now().getTime()));
      return create(ListHiresResponseSchema, { hires });
    },
    async receiptTimeline(req) {
      return read(receiptTimeline(d.db, { rangeSeconds: req.rangeSeconds, buckets: req.buckets }, d.now().getTime()));
    },
    async *watch(_req, ctx) {
      let wake: (() => void) | undefined;
      let dirty = true;
      const onChange = () => {
        dirty = true;
        wake?.();
      };
      d.changes.on("changed", onChange);
      const timer = setInterval(onChange, WATCH_REFRESH_MS);
      const onAbort = () => wake?.();
      ctx.signal.addEventListener("abort", onAbort);
      try {
        while (!ctx.signal.aborted) {
          if (!dirty) await new Promise<void>((r) => (wake = r));
          if (ctx.signal.aborted) break;
          dirty = false;
          const [machines, seats, receipts, hires] = await Promise.all([
            listMachines(d),
            listSeats(d),
            listReceipts(d, 100, false),
            listHires(d.db, { limit: WATCH_HIRES, unresolvedOnly: false }, d.now().getTime()),
          ]);
          yield create(WatchResponseSchema, { machines, seats, receipts, hires });
        }
      } finally {
        clearInterval(timer);
        d.changes.off("changed", onChange);
        ctx.signal.removeEventListener("abort", onAbort);
      }
    },
  };
}
