/**
 * The ids whose admission this process saw answered (it inserted the call receipt) and whose
 * call has not finished. A later attempt of one of them — a replay, from this conversation or
 * another — inserts nothing, so if its own admission gets no answer there is nothing of its own
 * to refuse by id: recording a refusal then (journal/refused-admission.ts) would settle the
 * original, still in flight, as not sent and free its seat. Per pipeline, in memory: across a
 * crash the original is the dead process's, and its in-flight receipt is recovery's to mark.
 */
const byPipeline = new WeakMap<object, Set<string>>();

export function admittedHere(pipeline: object): Set<string> {
  let ids = byPipeline.get(pipeline);
  if (!ids) byPipeline.set(pipeline, (ids = new Set()));
  return ids;
}
