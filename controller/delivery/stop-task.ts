/**
 * stop_task: stop a seat occupant's current turn through its native control (Codex
 * turn/interrupt on the exact turn, OpenCode interrupt, Pi abort, Claude's one guarded
 * Esc). Refused before anything is sent unless the seat advertises `interrupt` from its
 * live control (rule 46). It takes the seat's turn like a delivery, and never retries.
 */
import { create } from "@bufbuild/protobuf";
import { and, eq, or } from "drizzle-orm";
import { StopSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { machines, seats } from "../db/schema.js";
import { withSeatTurn } from "./turn.js";
import { joinSeatTurn } from "./turn-join.js";
import type { PipelineDeps } from "./pipeline.js";
import { mayStopSeat } from "../leads/seat-authority.js";
import { assertSeatRef } from "../../shared/ids.js";
import { isFencedWrite } from "../journal/lease-guard.js";

export interface StopOutcome extends Record<string, unknown> {
  schemaVersion: 1;
  seat: string;
  outcome:
    | "stopped"
    | "already_finished"
    | "unsupported"
    | "uncertain"
    | "unavailable"
    | "unknown_seat"
    | "not_authorized";
  detail: string;
}

export async function stopTask(deps: PipelineDeps, conversationId: string, seatRef: string): Promise<StopOutcome> {
  // A seat no name can match is refused here, before the journal (a NUL would surface as a database error).
  assertSeatRef("seat", seatRef);
  const found = await deps.db
    .select()
    .from(seats)
    .where(and(eq(seats.present, true), or(eq(seats.id, seatRef), eq(seats.name, seatRef))));
  if (found.length !== 1)
    return {
      schemaVersion: 1,
      seat: seatRef,
      outcome: "unknown_seat",
      detail: found.length ? "the name is ambiguous; use machine/name" : `no seat is named ${seatRef}`,
    };
  const seat = found[0]!;
  if (!(await mayStopSeat(deps.db, conversationId, seat.id, deps.now(), seat.occupantId))) {
    return {
      schemaVersion: 1,
      seat: seat.id,
      outcome: "not_authorized",
      detail: `only the owner, a conversation messaging ${seat.id} or the conversation that hired it may stop it; nothing was sent`,
    };
  }
  if (!seat.inputCapabilities.interrupt) {
    return {
      schemaVersion: 1,
      seat: seat.id,
      outcome: "unsupported",
      detail: `${seat.id} advertises no native stop; nothing was sent`,
    };
  }
  const [machine] = await deps.db.select().from(machines).where(eq(machines.name, seat.machine));
  if (!machine)
    return {
      schemaVersion: 1,
      seat: seat.id,
      outcome: "unavailable",
      detail: "the seat's machine is no longer registered; nothing was sent",
    };
  const leaseLost: StopOutcome = {
    schemaVersion: 1,
    seat: seat.id,
    outcome: "unavailable",
    detail: "this controller replica's instance lease was not surely live; nothing was sent — call again",
  };
  return withSeatTurn<StopOutcome>(
    deps.turns,
    joinSeatTurn(deps.turns, {
      seatId: seat.id,
      holder: `${deps.instanceId}:stop:${conversationId}`,
      signal: deps.shutdownSignal,
      waitMs: deps.seatTurnWaitMs,
    }),
    async (turn) => {
      if (!turn.held)
        return {
          schemaVersion: 1,
          seat: seat.id,
          outcome: "unavailable",
          detail: `another delivery held the seat for ${deps.seatTurnWaitMs / 1000} s; nothing was sent`,
        };
      // ADR 0036: a replica not surely holding its lease sends no native control.
      if (!deps.lease.holds()) return leaseLost;
      const conn = deps.agents.get(machine.name, machine.endpoint, machine.agentToken);
      if (!(await conn.connect()))
        return {
          schemaVersion: 1,
          seat: seat.id,
          outcome: "unavailable",
          detail: `the agent on ${machine.name} could not be reached; nothing was sent`,
        };
      try {
        const res = await conn.client.stopSeat(
          create(StopSeatRequestSchema, { seatName: seat.name, occupantId: seat.occupantId }),
          { timeoutMs: 20_000, signal: deps.shutdownSignal },
        );
        const outcome =
          (["stopped", "already_finished", "unsupported", "uncertain", "unavailable"] as const).find(
            (r) => r === res.result,
          ) ?? "uncertain";
        return { schemaVersion: 1, seat: seat.id, outcome, detail: res.detail };
      } catch (e) {
        return {
          schemaVersion: 1,
          seat: seat.id,
          outcome: "uncertain",
          detail: `the stop may have reached the agent but its answer was lost (${(e as Error).message}); it is never repeated`,
        };
      }
    },
  ).catch((e: unknown) => {
    // The journal refused this replica's place in the seat's line (its lease is lost, ADR 0036): nothing was sent.
    if (isFencedWrite(e)) return leaseLost;
    throw e;
  });
}
