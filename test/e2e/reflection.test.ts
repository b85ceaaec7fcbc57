/**
 * gRPC server reflection (v1 and v1alpha) on the controller's port, read by a stock grpc-js
 * reflection client (grpc-js-reflection-client) with no proto file on this side: it lists the
 * services, downloads StatusService's and grpc.health.v1's descriptors, and the package object
 * built from them calls both. Health answers per component: "", "database" and "agents".
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { GrpcReflection } from "grpc-js-reflection-client";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";

type Unary = (
  req: object,
  md: grpc.Metadata,
  cb: (e: grpc.ServiceError | null, v: Record<string, unknown>) => void,
) => void;

function call(
  client: grpc.Client,
  method: string,
  req: object,
  md = new grpc.Metadata(),
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) =>
    (client as unknown as Record<string, Unary>)[method]!.call(client, req, md, (e, v) => (e ? reject(e) : resolve(v))),
  );
}

describe("gRPC server reflection and per-component health on the status port", () => {
  let fleet: TestFleet;
  let target: string;

  beforeAll(async () => {
    fleet = await startFleet("pglite");
    target = new URL(fleet.controller.statusUrl).host;
  });
  afterAll(async () => {
    await fleet?.close();
  });

  for (const version of ["v1", "v1alpha"]) {
    it(`reflection ${version}: lists StatusService, Health and both reflection services`, async () => {
      const r = new GrpcReflection(target, grpc.credentials.createInsecure(), undefined, version);
      const services = await r.listServices();
      expect(services).toEqual(
        expect.arrayContaining([
          "clankie.fleet.v1.StatusService",
          "grpc.health.v1.Health",
          "grpc.reflection.v1.ServerReflection",
          "grpc.reflection.v1alpha.ServerReflection",
        ]),
      );
      const methods = (await r.listMethods("clankie.fleet.v1.StatusService")).map((m) => m.name);
      expect(methods).toEqual(expect.arrayContaining(["ListMachines", "ListSeats", "ListReceipts", "Watch"]));
    });
  }

  it("a client built only from reflected descriptors calls StatusService (with the owner token) and Health", async () => {
    const r = new GrpcReflection(target, grpc.credentials.createInsecure());
    const statusPkg = (await r.getDescriptorBySymbol("clankie.fleet.v1.StatusService")).getPackageObject({
      longs: String,
      enums: String,
      defaults: true,
    }) as unknown as {
      clankie: { fleet: { v1: { StatusService: grpc.ServiceClientConstructor } } };
    };
    const healthPkg = (await r.getDescriptorByFileName("grpc/health/v1/health.proto")).getPackageObject({
      enums: String,
    }) as unknown as {
      grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
    };
    const status = new statusPkg.clankie.fleet.v1.StatusService(target, grpc.credentials.createInsecure());
    const health = new healthPkg.grpc.health.v1.Health(target, grpc.credentials.createInsecure());
    try {
      const md = new grpc.Metadata();
      md.set("authorization", `Bearer ${fleet.controller.ownerToken}`);
      const machines = (await call(status, "listMachines", {}, md)).machines as { name: string; online: boolean }[];
      expect(machines).toEqual([expect.objectContaining({ name: "testbox", online: true })]);
      // The descriptor is public, the data is not.
      await expect(call(status, "listMachines", {})).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      for (const service of ["", "database", "agents", "clankie.fleet.v1.StatusService"]) {
        expect(await call(health, "check", { service }), service).toEqual({ status: "SERVING" });
      }
      await expect(call(health, "check", { service: "no.such.Service" })).rejects.toMatchObject({
        code: grpc.status.NOT_FOUND,
      });
    } finally {
      status.close();
      health.close();
    }
  });

  it("an unknown symbol is a NOT_FOUND error response, not a broken stream", async () => {
    const r = new GrpcReflection(target, grpc.credentials.createInsecure());
    await expect(r.getDescriptorBySymbol("no.such.Symbol")).rejects.toThrow(/not found/);
    // The same reflection endpoint still answers afterwards.
    expect(await r.listServices()).toContain("grpc.health.v1.Health");
  });

  it("health 'agents' goes NOT_SERVING when the only agent stops, while the server and database stay SERVING", async () => {
    const r = new GrpcReflection(target, grpc.credentials.createInsecure());
    const pkg = (await r.getDescriptorBySymbol("grpc.health.v1.Health")).getPackageObject({
      enums: String,
    }) as unknown as { grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } } };
    const health = new pkg.grpc.health.v1.Health(target, grpc.credentials.createInsecure());
    try {
      await fleet.agent.close();
      let agents = "";
      for (let i = 0; i < 200 && agents !== "NOT_SERVING"; i++) {
        agents = (await call(health, "check", { service: "agents" })).status as string;
        if (agents !== "NOT_SERVING") await new Promise((res) => setTimeout(res, 100));
      }
      expect(agents).toBe("NOT_SERVING");
      expect(await call(health, "check", { service: "" })).toEqual({ status: "SERVING" });
      expect(await call(health, "check", { service: "database" })).toEqual({ status: "SERVING" });
      await fleet.restartAgent();
      // Health answers from its cache, refreshed when a link comes up (ADR 0034).
      for (let i = 0; i < 50 && agents !== "SERVING"; i++) {
        agents = (await call(health, "check", { service: "agents" })).status as string;
        if (agents !== "SERVING") await new Promise((res) => setTimeout(res, 100));
      }
      expect(agents).toBe("SERVING");
    } finally {
      health.close();
    }
  });
});
