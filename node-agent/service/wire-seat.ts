/** Converts the agent's seat record and live snapshot to the wire Seat. */
import { create } from "@bufbuild/protobuf";
import {
  CannotWorkSchema,
  InputCapabilitiesSchema,
  SeatSchema,
  type Seat,
} from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { deliveryModeWire, seatKindWire, seatStatusWire } from "../../shared/verdicts.js";
import type { SeatRecord, SeatSnapshot } from "../harnesses/adapter.js";

export function toWireSeat(seat: SeatRecord, snapshot: SeatSnapshot): Seat {
  return create(SeatSchema, {
    name: seat.name,
    kind: seatKindWire.encode(seat.kind),
    status: seatStatusWire.encode(snapshot.status),
    occupantId: snapshot.occupantId,
    title: seat.title,
    inputCapabilities: create(InputCapabilitiesSchema, {
      deliveryModes: snapshot.inputCapabilities.deliveryModes.map((m) => deliveryModeWire.encode(m)),
      interrupt: snapshot.inputCapabilities.interrupt,
      nextTurnOnly: snapshot.inputCapabilities.nextTurnOnly,
    }),
    ...(snapshot.cannotWork ? { cannotWork: create(CannotWorkSchema, snapshot.cannotWork) } : {}),
  });
}
