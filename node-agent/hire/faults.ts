/**
 * The agent's hire fault point, for the lost-answer suites only: inert unless a test's
 * agent options name it. `drop_brief_answer` lets the brief's native write happen and then
 * loses its answer, exactly as a native link cut after the harness took the text would, so
 * the brief is delivery_unconfirmed while it did reach the model.
 */
import type { DeliverDeps } from "../deliver/deliver.js";
import { AdapterRegistry } from "../harnesses/registry.js";
import type { HarnessAdapter } from "../harnesses/adapter.js";
import { SeatKind } from "../../shared/verdicts.js";

export type HireFaultPoint = "drop_brief_answer";

/** The delivery deps for the brief: unchanged, or with every adapter's write answer lost after it wrote. */
export function briefDeliverDeps<D extends DeliverDeps>(deps: D, fault: HireFaultPoint | undefined): D {
  if (fault !== "drop_brief_answer") return deps;
  const lossy = new AdapterRegistry();
  for (const kind of Object.values(SeatKind)) {
    const a = deps.adapters.get(kind);
    if (!a) continue;
    const wrapped: HarnessAdapter = Object.create(a) as HarnessAdapter;
    wrapped.write = async (seat, req) => {
      await a.write(seat, req);
      throw new Error("the native answer was lost after the write (drop_brief_answer fault point)");
    };
    lossy.register(wrapped);
  }
  return { ...deps, adapters: lossy };
}
