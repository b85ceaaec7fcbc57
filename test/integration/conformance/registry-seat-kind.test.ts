/**
 * Robustness (issue 16): an agent reporting a seat kind this controller does not know is
 * refused with a typed InvalidArgument and nothing is written, instead of the seat being
 * relabelled `mailbox` (which would offer it mailbox semantics it does not have). A real
 * controller on a real socket, the gateway called over gRPC on the mutual-TLS agent port with a
 * machine certificate from a real join.
 */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AgentGatewayService,
  RegisterRequestSchema,
  ReportSeatsRequestSchema,
} from "../../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import {
  CannotWorkSchema,
  InputCapabilitiesSchema,
  SeatKind,
  SeatSchema,
  SeatStatus,
} from "../../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { joinFleet } from "../../../node-agent/identity/join.js";
import { CAPABILITY_VERSION } from "../../../shared/capability-version.js";
import { compileControllerConfig } from "../../../controller/config.js";
import { startController, type RunningController } from "../../../controller/main.js";
import { silentLogger } from "../../../shared/logger.js";
import { prepareStore, tempDir } from "../../kit/test-db.js";
import { ownerOf } from "../../kit/owner.js";

/** A kind number from a newer agent: not in this controller's SeatKind enum. */
const FUTURE_KIND = 42 as SeatKind;

describe("registry: unknown seat kinds", () => {
  let controller: RunningController;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const store = await prepareStore("pglite");
    cleanup = store.cleanup;
    controller = await startController(
      compileControllerConfig({
        stateDir: store.stateDir,
        port: 0,
        databaseUrl: store.databaseUrl,
        heartbeatIntervalMs: 1000,
      }),
      silentLogger,
    );
  });
  afterAll(async () => {
    await controller?.close();
    await cleanup?.();
  });

  // The gateway names the machine from the client certificate, so each machine joins for its own.
  const gateways = new Map<string, ReturnType<typeof createClient<typeof AgentGatewayService>>>();
  const gatewayFor = async (machine: string) => {
    let gw = gateways.get(machine);
    if (!gw) {
      const id = await joinFleet({
        stateDir: tempDir(`seat-kind-${machine}`),
        controllerUrl: controller.agentUrl,
        token: await controller.issueJoinToken(machine),
        agentVersion: "test",
      });
      gw = createClient(
        AgentGatewayService,
        createGrpcTransport({
          baseUrl: controller.agentUrl,
          nodeOptions: { ca: [id.caCertificatePem], cert: id.certificatePem, key: id.privateKeyPem },
        }),
      );
      gateways.set(machine, gw);
    }
    return gw;
  };
  const seat = (name: string, kind: SeatKind) =>
    create(SeatSchema, {
      name,
      kind,
      status: SeatStatus.IDLE,
      occupantId: randomUUID(),
      inputCapabilities: create(InputCapabilitiesSchema, {}),
    });
  const register = (machine: string, seats: ReturnType<typeof seat>[], instanceId = randomUUID()) =>
    gatewayFor(machine).then((gw) =>
      gw.register(
        create(RegisterRequestSchema, {
          machine,
          endpoint: "http://127.0.0.1:9/",
          agentToken: "t",
          capabilityVersion: CAPABILITY_VERSION,
          platform: "linux",
          agentVersion: "test",
          seats,
          instanceId,
        }),
      ),
    );

  it("register with an unknown seat kind is refused (InvalidArgument) and registers neither the machine's seats nor a mailbox", async () => {
    const err = await register("newer-agent", [seat("known", SeatKind.MAILBOX), seat("future", FUTURE_KIND)]).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/seat "future" reports seat kind 42/);
    const seats = await ownerOf(controller.url, controller.ownerToken).seats();
    expect(seats.filter((s) => s.id.startsWith("newer-agent/"))).toEqual([]);
  });

  it("a later seat report with an unknown kind is refused and leaves the registered seats as they were", async () => {
    const instanceId = randomUUID();
    await register("steady-agent", [seat("inbox", SeatKind.MAILBOX)], instanceId);
    const err = await (await gatewayFor("steady-agent"))
      .reportSeats(
        create(ReportSeatsRequestSchema, {
          machine: "steady-agent",
          instanceId,
          seats: [seat("inbox", SeatKind.MAILBOX), seat("future", FUTURE_KIND)],
        }),
      )
      .catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    const seats = (await ownerOf(controller.url, controller.ownerToken).seats()).filter((s) =>
      s.id.startsWith("steady-agent/"),
    );
    expect(seats.map((s) => [s.id, s.seat?.kind])).toEqual([["steady-agent/inbox", SeatKind.MAILBOX]]);
  });

  it("issue 35: a seat that comes to say it cannot work after its first report shows it, and shows its recovery", async () => {
    const instanceId = randomUUID();
    const first = seat("worker", SeatKind.OPENCODE);
    await register("later-agent", [first], instanceId);
    const report = async (cannotWork?: { reason: string; detail: string }) =>
      (await gatewayFor("later-agent")).reportSeats(
        create(ReportSeatsRequestSchema, {
          machine: "later-agent",
          instanceId,
          seats: [{ ...first, ...(cannotWork ? { cannotWork: create(CannotWorkSchema, cannotWork) } : {}) }],
        }),
      );
    const shown = async () =>
      (await ownerOf(controller.url, controller.ownerToken).seats()).find((s) => s.id === "later-agent/worker")?.seat
        ?.cannotWork?.reason;
    expect(await shown()).toBeUndefined();
    // Only cannot_work changes (same status, occupant and capabilities): the row must still be updated.
    await report({ reason: "no_api_key", detail: "OpenCode's /config/providers lists no provider anthropic" });
    expect(await shown()).toBe("no_api_key");
    await report();
    expect(await shown()).toBeUndefined();
  });
});
