/**
 * Crash windows with real processes (scenarios 2 and 3): `clankie up` is SIGKILLed right
 * after the receipt commit, and right after the agent's write but before the settle. At
 * the next start nothing is replayed, and reconcile_seat_call reports what the receipt and
 * the seat's session prove. CLANKIE_FAULT parks the pipeline at the window so the kill
 * lands there deterministically.
 */
import { afterEach, describe, expect, it } from "vitest";
import { prepareStore } from "../kit/test-db.js";
import { runCli, startUp, type UpProcess } from "../kit/cli.js";
import { connectLead } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { readToken } from "../../controller/state-dir.js";

const driver = process.env.DATABASE_URL ? "postgres" : "pglite";

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe(`crash windows (real processes, ${driver})`, () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });

  async function crashAt(fault: "hang_after_admit" | "hang_after_agent_reply", text: string) {
    const store = await prepareStore(driver);
    cleanups.push(store.cleanup);
    const env = { DATABASE_URL: store.databaseUrl ?? "" };
    const args = ["--state-dir", store.stateDir, "--port", "0", "--machine", "crashbox"];
    const first = await startUp(args, { ...env, CLANKIE_FAULT: fault });
    cleanups.push(() => first.stop());
    expect((await runCli(["seat", "add", "mailbox", "inbox", "--state-dir", store.stateDir], env)).code).toBe(0);
    const lead = await connectLead(first.ready.mcpUrl, first.ready.token);
    const lost = lead.call("message_seat", { seat: "inbox", message: text }).catch((e: Error) => e);
    const owner = ownerOf(first.ready.statusUrl, readToken(store.stateDir, "owner")!);
    const read = async () => JSON.parse((await runCli(["mailbox", "read", "inbox", "--peek", "--json", "--state-dir", store.stateDir], env)).stdout).messages as { deliveryId: string; text: string }[];
    const id = await until("the receipt", async () => (await owner.receipts()).find((r) => r.state === "dispatching")?.deliveryId);
    if (fault === "hang_after_agent_reply") await until("the agent's write", async () => ((await read()).some((m) => m.deliveryId === id) ? true : undefined));
    first.child.kill("SIGKILL");
    // The lead's connection died with the controller; closing the client ends its pending call.
    await lead.close().catch(() => {});
    expect(await lost).toBeInstanceOf(Error);

    const second: UpProcess = await startUp(args, env);
    cleanups.push(() => second.stop());
    const lead2 = await connectLead(second.ready.mcpUrl, second.ready.token);
    cleanups.push(() => lead2.close());
    await new Promise((r) => setTimeout(r, 1000));
    return { id, lead: lead2, read, owner: ownerOf(second.ready.statusUrl, readToken(store.stateDir, "owner")!) };
  }

  it("killed after the receipt commit and before the agent call: stays uncertain, is never replayed at boot, and only a settle path frees it", async () => {
    const { id, lead, read, owner } = await crashAt("hang_after_admit", "written but never sent");
    expect((await read()).filter((m) => m.deliveryId === id)).toHaveLength(0);
    expect((await owner.receipts()).find((r) => r.deliveryId === id)?.state).toBe("uncertain");
    const rec = await lead.call("reconcile_seat_call", { deliveryId: id });
    expect(rec.structuredContent).toMatchObject({ outcome: "uncertain", deliveryId: id, detail: expect.stringContaining("does not hold the original") });
    expect((await lead.call("message_seat", { seat: "inbox", message: "written but never sent" })).structuredContent).toMatchObject({ reason: "fenced_by_unresolved_original", originalDeliveryId: id });
    const settled = await lead.call("reconcile_seat_call", { deliveryId: id, settle: "not_delivered" });
    expect(settled.structuredContent).toMatchObject({ state: "abandoned-unknown" });
    expect((await read()).filter((m) => m.text === "written but never sent")).toHaveLength(0);
  });

  it("killed after the agent's write and before the settle: the session proves delivery, exactly one copy, never resent", async () => {
    const { id, lead, read, owner } = await crashAt("hang_after_agent_reply", "written and delivered");
    expect((await read()).filter((m) => m.deliveryId === id)).toHaveLength(1);
    const rec = await lead.call("reconcile_seat_call", { deliveryId: id });
    expect(rec.structuredContent).toMatchObject({ outcome: "delivered", deliveryId: id, detail: expect.stringContaining("session") });
    expect((await owner.receipts()).find((r) => r.deliveryId === id)?.state).toBe("delivered");
    const again = await lead.call("message_seat", { seat: "inbox", message: "written and delivered" }, { "clankie/seat-call": { deliveryId: id } });
    expect(again.structuredContent).toMatchObject({ outcome: "delivered", deliveryId: id });
    expect((await read()).filter((m) => m.deliveryId === id)).toHaveLength(1);
  });
});
