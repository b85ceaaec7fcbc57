/** The AgentService methods for hiring: HireSeat and HireCensus, on the Hirer. */
import { create } from "@bufbuild/protobuf";
import { ErrorCode, FleetError, InvalidArgumentError } from "../../shared/errors.js";
import {
  HireCensusResponseSchema,
  HireSeatResponseSchema,
  type HireCensusRequest,
  type HireCensusResponse,
  type HireSeatRequest,
  type HireSeatResponse,
} from "../../shared/gen/clankie/fleet/v1/hire_pb.js";
import { ProofSchema } from "../../shared/gen/clankie/fleet/v1/delivery_pb.js";
import { InputCapabilitiesSchema, SeatSchema } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { parseUuid } from "../../shared/ids.js";
import {
  deliveryModeWire,
  seatKindWire,
  seatStatusWire,
  type SeatKind,
  type SeatStatus,
} from "../../shared/verdicts.js";
import { HireRefusedError, type Hirer } from "./hire.js";
import type { RecordedAnswer } from "./host-journal.js";
import { hireKinds } from "../harnesses/registry.js";

export function answerToWire(a: RecordedAnswer & { replayed?: boolean }): HireSeatResponse {
  return create(HireSeatResponseSchema, {
    outcome: a.outcome,
    reason: a.reason,
    detail: a.detail,
    paneId: a.paneId ?? "",
    briefMechanism: a.briefMechanism ?? "",
    briefDeliveryId: a.briefDeliveryId ?? "",
    controlReason: a.controlReason ?? "",
    controlFix: a.controlFix ?? "",
    launchCommitted: a.launchCommitted,
    replayed: a.replayed ?? false,
    paneClosed: a.paneClosed ?? false,
    // Ages are whole milliseconds on the wire (uint32); a fractional one would fail the whole answer.
    proofs: (a.proofs ?? []).map((p) =>
      create(ProofSchema, {
        kind: p.kind,
        outcome: p.outcome,
        detail: p.detail,
        ageAtWriteMs: Math.max(0, Math.round(p.ageAtWriteMs)),
      }),
    ),
    ...(a.seat
      ? {
          seat: create(SeatSchema, {
            name: a.seat.name,
            kind: seatKindWire.encode(a.seat.kind as SeatKind),
            status: seatStatusWire.encode(a.seat.status as SeatStatus),
            occupantId: a.seat.occupantId,
            title: a.seat.title,
            inputCapabilities: create(InputCapabilitiesSchema, {
              deliveryModes: a.seat.inputCapabilities.deliveryModes.map((m) => deliveryModeWire.encode(m)),
              interrupt: a.seat.inputCapabilities.interrupt,
              nextTurnOnly: a.seat.inputCapabilities.nextTurnOnly,
            }),
          }),
        }
      : {}),
  });
}

export function hireMethods(hirer: () => Hirer | undefined) {
  const need = () => {
    const h = hirer();
    if (!h) throw new FleetError(ErrorCode.Unavailable, "this agent cannot hire yet (starting)", { retryable: true });
    return h;
  };
  return {
    async hireSeat(req: HireSeatRequest): Promise<HireSeatResponse> {
      // Refusals as errors only here, before anything is reserved or launched.
      // Canonical before it names a journal entry (issue 32 item 4).
      req.hireId = parseUuid("hire_id", req.hireId);
      if (!/^[0-9a-f]{64}$/.test(req.fingerprint))
        throw new InvalidArgumentError("fingerprint must be a sha256 hex digest");
      const harness = seatKindWire.decode(req.harness);
      const kinds = hireKinds();
      if (!harness || !kinds.includes(harness)) {
        const names = `${kinds.slice(0, -1).join(", ")} or ${kinds.at(-1)}`;
        throw new InvalidArgumentError(`harness must be ${names}, got ${harness ?? req.harness}`);
      }
      try {
        // A dropped client does not stop a hire: once committed it finishes and records its answer.
        const answer = await need().hire({
          hireId: req.hireId,
          fingerprint: req.fingerprint,
          harness,
          workingDirectory: req.workingDirectory,
          title: req.title,
          role: req.role,
          brief: req.brief,
          model: req.model,
          effort: req.effort,
          conversationId: req.conversationId,
        });
        return answerToWire(answer);
      } catch (e) {
        if (e instanceof HireRefusedError) throw new FleetError(ErrorCode.AlreadyExists, e.message);
        throw e;
      }
    },
    async hireCensus(req: HireCensusRequest): Promise<HireCensusResponse> {
      req.hireId = parseUuid("hire_id", req.hireId);
      const { record, view, seatName } = await need().census(req.hireId, req.seal);
      return create(HireCensusResponseSchema, {
        journalState: record?.state ?? "absent",
        ...(record?.state === "finished" && record.answer ? { recorded: answerToWire(record.answer) } : {}),
        panes: view.panes,
        processes: view.processes,
        sessions: view.sessions,
        observedAtUnixMs: BigInt(view.observedAtMs),
        sha256: view.sha256,
        reservedAtUnixMs: BigInt(record?.reservedAtMs ?? 0),
        seatName: seatName ?? "",
        complete: view.complete,
        unknown: view.unknown,
      });
    },
  };
}
