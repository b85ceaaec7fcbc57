/** `clankie doctor`: checks the controller, its database, its agents and its port; non-zero exit when something is wrong. */
import { isProcessAlive } from "../shared/process-alive.js";
import { create } from "@bufbuild/protobuf";
import {
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus as Serving,
} from "../shared/gen/grpc/health/v1/health_pb.js";
import { ListMachinesRequestSchema, ListReceiptsRequestSchema } from "../shared/gen/clankie/fleet/v1/status_pb.js";
import { readControllerRecord } from "../shared/controller-record.js";
import { ownerClients } from "../shared/owner-client.js";
import { cliError, emit, type OutputOptions } from "./output.js";
import { ErrorCode } from "../shared/errors.js";
import { ExitCode } from "./exit-codes.js";
import { age } from "./receipts.js";
import { visibleInline } from "../shared/terminal-text.js";

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  /** Worth the owner's attention but not a failure (a revoked machine waiting to be removed): ok stays true. */
  warn?: boolean;
}

const verdictOf = (c: Check) => (c.warn ? "WARN" : c.ok ? "ok  " : "FAIL");

export async function doctor(stateDir: string, controller: string | undefined, out: OutputOptions): Promise<number> {
  const checks: Check[] = [];
  const unresolved: { deliveryId: string; seatId: string; conversationId: string; state: string; ageMs: number }[] = [];
  const record = readControllerRecord(stateDir);
  // The exit code tells a script why (exit-codes.ts): no controller answers is 3, a refused token 4.
  let failure: number = ExitCode.Failed;
  if (!controller && !(record && isProcessAlive(record.pid))) failure = ExitCode.Unreachable;
  if (!controller) {
    checks.push(
      record
        ? {
            name: "controller record",
            ok: isProcessAlive(record.pid),
            detail: `${stateDir}/controller.json: pid ${record.pid} ${isProcessAlive(record.pid) ? "running" : "not running (stale record)"}, ${record.url}`,
          }
        : {
            name: "controller record",
            ok: false,
            detail: `no controller.json in ${stateDir}: is 'clankie up' running with this --state-dir?`,
          },
    );
  }
  if (controller || (record && isProcessAlive(record.pid))) {
    try {
      const c = ownerClients(stateDir, controller);
      const health = async (service: string) =>
        (await c.health.check(create(HealthCheckRequestSchema, { service }), { timeoutMs: 5000 })).status;
      const overall = await health("");
      checks.push({ name: "port", ok: true, detail: `the controller answers at ${c.url}` });
      checks.push({ name: "controller", ok: overall === Serving.SERVING, detail: `health ${Serving[overall]}` });
      const db = await health("database");
      checks.push({
        name: "database",
        ok: db === Serving.SERVING,
        detail: `${record?.database ?? "journal"}: ${Serving[db]}`,
      });
      const machines = (await c.status.listMachines(create(ListMachinesRequestSchema, {}), { timeoutMs: 5000 }))
        .machines;
      const agents = await health("agents");
      const online = machines.filter((m) => m.online).length;
      const revoked = machines.filter((m) => m.revoked).length;
      const registered = `${machines.length} registered, ${online} online${revoked ? `, ${revoked} revoked` : ""}`;
      checks.push({
        name: "agents",
        ok: machines.length > revoked && agents === Serving.SERVING,
        detail: machines.length ? `${registered} (health ${Serving[agents]})` : "no agent has registered",
      });
      for (const m of machines) {
        // Revoked is the owner's decision, not a fault: a warning until `fleet remove` forgets it.
        const name = `agent ${m.name}`;
        const remove = `clankie fleet remove ${m.name}`;
        const seen = age(Number(m.lastSeenAgeMs));
        if (m.revoked) checks.push({ name, ok: true, warn: true, detail: `revoked; remove it with: ${remove}` });
        else
          checks.push({
            name: `agent ${m.name}`,
            ok: m.online,
            // In s, m, h or d: an offline machine's age is read at a glance, not counted in milliseconds.
            detail: `${m.online ? "online" : "OFFLINE"}, last heartbeat ${seen} ago, ${m.endpoint}`,
          });
      }
      for (const r of (
        await c.status.listReceipts(create(ListReceiptsRequestSchema, { unresolvedOnly: true, limit: 1000 }), {
          timeoutMs: 5000,
        })
      ).receipts) {
        unresolved.push({
          deliveryId: r.deliveryId,
          seatId: r.seatId,
          conversationId: r.conversationId,
          state: r.state,
          ageMs: Number(r.ageMs),
        });
      }
    } catch (e) {
      // Health is open, the lists need the owner token: a refusal there is the token, not the port.
      const err = cliError(e);
      failure =
        err.code === ErrorCode.Unauthenticated
          ? ExitCode.Unauthenticated
          : err.code === ErrorCode.ControllerUnreachable
            ? ExitCode.Unreachable
            : ExitCode.Failed;
      checks.push(
        err.code === ErrorCode.Unauthenticated
          ? {
              name: "owner token",
              ok: false,
              detail: `the controller answers but refused the owner token in ${stateDir}/owner.token (${err.message}); is this the state dir of the controller at --controller?`,
            }
          : { name: "port", ok: false, detail: `the controller does not answer: ${err.message}` },
      );
    }
  }
  const ok = checks.every((c) => c.ok);
  emit(out, { ok, checks, unresolvedDeliveries: unresolved }, () =>
    [
      // Names, details and ids come from agents and leads: escaped for the terminal.
      ...checks.map((c) => `${verdictOf(c)}  ${visibleInline(c.name)}: ${visibleInline(c.detail)}`),
      ...(unresolved.length
        ? [
            "",
            `${unresolved.length} unresolved deliveries (only their own resend is refused):`,
            ...unresolved.map(
              (u) =>
                `  ${[u.deliveryId, u.conversationId, u.seatId, u.state].map(visibleInline).join("  ")}  ${Math.round(u.ageMs / 1000)} s`,
            ),
          ]
        : []),
    ].join("\n"),
  );
  return ok ? ExitCode.Ok : failure;
}
