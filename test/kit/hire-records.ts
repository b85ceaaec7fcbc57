/**
 * A hire recorded as the controller records one — the hire and call receipts reserved at
 * admission, then settled by hire-record.ts `record` from the agent's HireSeatResponse — for views
 * that need a spawned hire where no harness can start (the real launches: test/harnesses/).
 */
import { join } from "node:path";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { HireSeatResponseSchema } from "../../shared/gen/clankie/fleet/v1/hire_pb.js";
import { callReceipts, hireReceipts } from "../../controller/db/schema.js";
import { bodyFromAgent, record, type HireJournal } from "../../controller/hire/hire-record.js";
import { HireState } from "../../controller/hire/bodies.js";
import { UnrecordedOutcomes } from "../../controller/delivery/unrecorded-outcomes.js";
import type { Db } from "../../controller/db/open.js";
import { silentLogger } from "../../shared/logger.js";

export interface RecordedHire {
  id: string;
  machine: string;
  harness: string;
  conversationId?: string;
  createdAt?: Date;
  answer: MessageInitShape<typeof HireSeatResponseSchema>;
}

export async function recordHire(db: Db, stateDir: string, h: RecordedHire): Promise<void> {
  const at = h.createdAt ?? new Date();
  const conversationId = h.conversationId ?? "global-default";
  const fingerprint = `fp-${h.id}`;
  const call = { id: h.id, tool: "hire_agent", conversationId, fingerprint, state: "in_flight", createdAt: at };
  await db.insert(callReceipts).values(call);
  await db.insert(hireReceipts).values({
    id: h.id,
    conversationId,
    fingerprint,
    machine: h.machine,
    harness: h.harness,
    state: HireState.Reserved,
    createdAt: at,
    updatedAt: at,
  });
  const deps: HireJournal = {
    db,
    now: () => new Date(),
    onJournalChange: () => {},
    logger: silentLogger,
    instanceId: "hire-records",
    // No fence: these records stand for a hire settled before any lease check applies.
    lease: { fence: () => undefined as never },
    unrecorded: new UnrecordedOutcomes(silentLogger, async () => {}, join(stateDir, "hire-records-spill.json")),
  };
  const base = { schemaVersion: 1 as const, hireId: h.id, machine: h.machine, harness: h.harness };
  const body = bodyFromAgent(base, create(HireSeatResponseSchema, h.answer));
  const state = body.outcome === "spawned" ? HireState.Spawned : HireState.Failed;
  await record(deps, h.id, body, state);
}
