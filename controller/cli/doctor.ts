/** `clankie doctor`: checks the controller, its database, its agents and its port; non-zero exit when something is wrong. */
import { isProcessAlive } from "../../shared/process-alive.js";
import { create } from "@bufbuild/protobuf";
import { HealthCheckRequestSchema, HealthCheckResponse_ServingStatus as Serving } from "../../shared/gen/grpc/health/v1/health_pb.js";
import { ListMachinesRequestSchema, ListReceiptsRequestSchema } from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { readControllerRecord } from "../state-dir.js";
import { ownerClients } from "./owner-client.js";
import { emit, type OutputOptions } from "./output.js";

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}


export async function doctor(stateDir: string, controller: string | undefined, out: OutputOptions): Promise<number> {
  const checks: Check[] = [];
  const unresolved: { deliveryId: string; seatId: string; conversationId: string; state: string; ageMs: number }[] = [];
  const record = readControllerRecord(stateDir);
  if (!controller) {
    checks.push(
      record
        ? { name: "controller record", ok: isProcessAlive(record.pid), detail: `${stateDir}/controller.json: pid ${record.pid} ${isProcessAlive(record.pid) ? "running" : "not running (stale record)"}, ${record.url}` }
        : { name: "controller record", ok: false, detail: `no controller.json in ${stateDir}: is 'clankie up' running with this --state-dir?` },
    );
  }
  if (controller || (record && isProcessAlive(record.pid))) {
    try {
      const c = ownerClients(stateDir, controller);
      const health = async (service: string) => (await c.health.check(create(HealthCheckRequestSchema, { service }), { timeoutMs: 5000 })).status;
      const overall = await health("");
      checks.push({ name: "port", ok: true, detail: `the controller answers at ${c.url}` });
      checks.push({ name: "controller", ok: overall === Serving.SERVING, detail: `health ${Serving[overall]}` });
      const db = await health("database");
      checks.push({ name: "database", ok: db === Serving.SERVING, detail: `${record?.database ?? "journal"}: ${Serving[db]}` });
      const machines = (await c.status.listMachines(create(ListMachinesRequestSchema, {}), { timeoutMs: 5000 })).machines;
      checks.push({ name: "agents", ok: machines.length > 0, detail: machines.length ? `${machines.length} registered` : "no agent has registered" });
      for (const m of machines) {
        checks.push({ name: `agent ${m.name}`, ok: m.online, detail: `${m.online ? "online" : "OFFLINE"}, last heartbeat ${Number(m.lastSeenAgeMs)} ms ago, ${m.endpoint}` });
      }
      for (const r of (await c.status.listReceipts(create(ListReceiptsRequestSchema, { unresolvedOnly: true, limit: 1000 }), { timeoutMs: 5000 })).receipts) {
        unresolved.push({ deliveryId: r.deliveryId, seatId: r.seatId, conversationId: r.conversationId, state: r.state, ageMs: Number(r.ageMs) });
      }
    } catch (e) {
      checks.push({ name: "port", ok: false, detail: `the controller does not answer: ${(e as Error).message}` });
    }
  }
  const ok = checks.every((c) => c.ok);
  emit(out, { ok, checks, unresolvedDeliveries: unresolved }, () =>
    [
      ...checks.map((c) => `${c.ok ? "ok  " : "FAIL"}  ${c.name}: ${c.detail}`),
      ...(unresolved.length
        ? ["", `${unresolved.length} unresolved deliveries (only their own resend is refused):`, ...unresolved.map((u) => `  ${u.deliveryId}  ${u.conversationId}  ${u.seatId}  ${u.state}  ${Math.round(u.ageMs / 1000)} s`)]
        : []),
    ].join("\n"),
  );
  return ok ? 0 : 1;
}
