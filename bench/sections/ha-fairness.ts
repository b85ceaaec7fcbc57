/**
 * The high_availability section's fairness measurement (issue 34 item 4): 4 callers on each of 2 replicas,
 * straight to each replica (not through the balancer), to one seat; run again through one replica as the
 * control (ADR 0046). Reports the turns each call waited (the deliveries that reached the seat between its
 * admission and its arrival), the turns skipped (a delivery that reached the seat after one admitted later
 * than it), each caller's mean and the slowest call in ms, where the slowest call's time went (admitted,
 * reached the seat, settled: ms from its start, by the journal's and the mailbox's clocks on this host), and
 * the longest stall of the callers' own event loop (ha-fairness-callers.ts): a stall there is timed as a
 * wait of every call in flight and is no part of the controller's turn order.
 */
import { fork } from "node:child_process";
import { join } from "node:path";
import type { HaCluster } from "../../verify/ha-cluster.js";
import { connectLead, type Lead } from "../../verify/leads.js";
import type { FairCall, FairCallersAnswer, FairCallersTask } from "../ha-fairness-callers.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { round } from "../stats.js";

const SEAT = "a1/fair";
const CALLERS = 8;
const WARM_CALLS_PER_REPLICA = 5;

/** Runs the timed callers in their own process (ha-fairness-callers.ts): opened, then started together. */
async function callInOwnProcess(task: FairCallersTask): Promise<Extract<FairCallersAnswer, { calls: unknown }>> {
  const child = fork(new URL("../ha-fairness-callers.js", import.meta.url), [JSON.stringify(task)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    child.on("message", (a: FairCallersAnswer) => {
      if ("ready" in a) child.send("go");
      else if ("failed" in a) reject(new Error(`fairness callers: ${a.failed}`));
      else resolve(a);
    });
    child.once("exit", (code) => reject(new Error(`fairness callers exited (${code})`)));
  });
}

/**
 * `through`: the replicas the callers call, caller i through `through[i % length]`. Through one replica the
 * turn passes in process in FIFO order, fair by construction: the control beside the measurement of two.
 */
export async function fairness(
  c: HaCluster,
  callsEach: number,
  through: readonly number[] = [0, 1],
): Promise<Record<string, unknown>> {
  const mailboxes = new MailboxStore(join(c.agents.get("a1")!.stateDir, "mailboxes"));
  if (!mailboxes.exists("fair")) await c.addMailboxes("a1", ["fair"]);
  const tag = through.join("");
  const callers: Lead[] = [];
  for (let i = 0; i < CALLERS; i++)
    callers.push({ name: `fair-${tag}-${i}`, token: await c.issueLeadToken(`bench-ha-fair-${tag}-${i}`) });
  // Before the clock: the seat's first write (a new mailbox), and warm-up calls through each replica, as many
  // at once as its timed callers. A replica's first calls after a start or a failover run 2–3x slower (cold
  // code, and write-pool connections that are opened and prepare the delivery statements on first use): in
  // the runs before this warm-up the slowest call was always a first call, admitted 60–230 ms after it
  // started; with the warm-up one call at a time, a first call was still admitted 84–133 ms late, as the
  // burst of simultaneous first calls opened pool connections the sequential warm-up never had. That is no
  // part of the turn order this measures (the kill and promotion parts time the first calls after a failure).
  // Both replicas at once, as the timed part runs: the hand-offs across replicas (the notification, the claim)
  // are warmed too. Warmed one replica after the other, the timed burst's first cross-replica hand-off was its
  // slowest step (a settle 52 ms after its arrival, where later ones took 6-25 ms).
  const urlOf = (i: number) => `${c.replicas[through[i % through.length]!]!.url}/mcp`;
  const warm = await Promise.all(
    Array.from({ length: CALLERS }, async (_, w): Promise<Lead> => {
      const l: Lead = {
        name: `fair-warm-${tag}-${w}`,
        token: await c.issueLeadToken(`bench-ha-fair-warm-${tag}-${w}`),
      };
      l.client = await connectLead(urlOf(w), l);
      return l;
    }),
  );
  await Promise.all(
    warm.map(async (l, w) => {
      for (let k = 0; k < WARM_CALLS_PER_REPLICA; k++)
        await l.client!.callTool(
          { name: "message_seat", arguments: { seat: SEAT, message: `fair warm-up ${w} ${k}` } },
          undefined,
          { timeout: 60_000 },
        );
      await l.client!.close().catch(() => {});
    }),
  );
  const since = new Date();
  const { calls, errors, loopStallMs } = await callInOwnProcess({
    seat: SEAT,
    callsEach,
    callers: callers.map((lead, i) => ({ lead, mcpUrl: urlOf(i) })),
  });
  // Delivery order is the seat's own (the mailbox, in arrival order); admission order is the receipts' created_at.
  const arrived = mailboxes.list("fair").entries.filter((e) => e.receivedAtMs >= since.getTime());
  const receipts = new Map<string, { admitted: number; settled: number | null }>();
  const ids = arrived.map((e) => e.deliveryId);
  for (let i = 0; i < ids.length; i += 500) {
    for (const r of await c.journal<
      { id: string; created_at: Date; settled_at: Date | null }[]
    >`select id, created_at, settled_at from delivery_receipts where id in ${c.journal(ids.slice(i, i + 500))}`)
      receipts.set(r.id, { admitted: r.created_at.getTime(), settled: r.settled_at?.getTime() ?? null });
  }
  // A turn is skipped when a delivery arrives after one admitted later than it.
  let skipped = 0;
  let latest = 0;
  for (const e of arrived.sort((x, y) => x.receivedAtMs - y.receivedAtMs)) {
    const at = receipts.get(e.deliveryId)?.admitted;
    if (at === undefined) continue;
    if (at < latest) skipped++;
    latest = Math.max(latest, at);
  }
  // Turns waited: the deliveries that reached the seat between a call's admission and its own arrival. In the
  // fleet-wide admission order that is at most the callers ahead of it (7), whatever the box's stalls cost in ms.
  // (Both clocks are this host's, in ms: one that arrived in the admission's own ms is not counted.)
  const inOrder = arrived.filter((e) => receipts.has(e.deliveryId));
  const turnsWaited = inOrder.map((e, i) => {
    const admitted = receipts.get(e.deliveryId)!.admitted;
    return inOrder.slice(0, i).filter((f) => f.receivedAtMs > admitted).length;
  });
  const meanTurns = turnsWaited.reduce((a, b) => a + b, 0) / Math.max(1, turnsWaited.length);
  const waits = calls.map((x) => x.ms);
  const mean = waits.reduce((a, b) => a + b, 0) / Math.max(1, waits.length);
  const perReplica = through.map((_, r) => calls.filter((x) => x.caller % through.length === r).map((x) => x.ms));
  // Each caller's own mean against the mean of all: a replica or caller served after the others (the unfair
  // order issue 34 found, one replica's 200 calls before the other's) shows here, a stall that every call in
  // flight shares does not.
  const callerMeans = callers.map((_, i) => {
    const w = calls.filter((x) => x.caller === i).map((x) => x.ms);
    return w.reduce((a, b) => a + b, 0) / Math.max(1, w.length);
  });
  const slowest = calls.reduce<FairCall | undefined>((a, x) => (a && a.ms >= x.ms ? a : x), undefined);
  const receipt = slowest && receipts.get(slowest.id);
  const reached = slowest && arrived.find((e) => e.deliveryId === slowest.id)?.receivedAtMs;
  const after = (at: number | null | undefined) => (at == null || !slowest ? null : round(at - slowest.startedAt));
  // Where the slowest call's wait went: each move of the seat's turn (the audit's verify_turns) and each arrival
  // at the seat from its start to its own arrival, in ms from its start.
  const during =
    slowest && reached !== undefined
      ? {
          turn_moves: (
            await c.journal<{ at: Date; op: string; holder: string | null; who: string }[]>`
              select at, op, holder, who from verify_turns where tbl = 'seat_turns' and seat_id = ${SEAT}
                and at between ${new Date(slowest.startedAt)} and ${new Date(reached)} order by at`
          ).map((m) => ({ after_ms: after(m.at.getTime()), op: m.op, to: m.holder?.slice(-8) ?? null, by: m.who })),
          arrivals_after_ms: arrived
            .filter((e) => e.receivedAtMs >= slowest.startedAt && e.receivedAtMs <= reached)
            .map((e) => after(e.receivedAtMs)),
        }
      : undefined;
  return {
    calls: waits.length,
    errors,
    mean_wait_ms: round(mean),
    max_wait_ms: round(Math.max(...waits)),
    max_over_mean: round(Math.max(...waits) / mean),
    mean_wait_ms_per_replica: perReplica.map((w) => round(w.reduce((a, b) => a + b, 0) / Math.max(1, w.length))),
    worst_caller_mean_over_mean: round(Math.max(...callerMeans) / mean),
    slowest_call: slowest && {
      replica: through[slowest.caller % through.length]! + 1,
      caller: slowest.caller,
      call: slowest.call,
      // To find its window in the replicas' and agents' logs.
      started_at: new Date(slowest.startedAt).toISOString(),
      ms: round(slowest.ms),
      admitted_after_ms: after(receipt?.admitted),
      reached_seat_after_ms: after(reached),
      settled_after_ms: after(receipt?.settled),
      ...during,
    },
    skipped_turns: skipped,
    mean_turns_waited: round(meanTurns),
    max_turns_waited: Math.max(0, ...turnsWaited),
    max_over_mean_turns: round(Math.max(0, ...turnsWaited) / Math.max(1e-9, meanTurns)),
    callers_loop_stall_max_ms: round(loopStallMs),
  };
}
