/**
 * Issue 35 item 2: a seat whose harness cannot work is shown as such, with the reason. A real
 * Pi TUI an owner started in a pane with no key for its model (the case: it was shown
 * `idle`, offering `send`, and a message_seat to it answered `delivered` after blocking 10 s):
 * list_seats carries `cannotWork {reason: "no_api_key", detail}` from Pi's own get_state answer
 * and offers no delivery mode, `clankie seat list` shows the same (modes exactly list_seats's),
 * and message_seat is refused before anything is written (`seat_cannot_work`).
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt, runCli } from "../kit/cli.js";
import { requireHarness } from "./kit/harness-bin.js";
import { startPiPane, type PiPane } from "./kit/pi-pane.js";
import { prepareWorkerReportStore, startWorkerReportFleet, type WorkerReportFleet } from "./kit/worker-report-fleet.js";

const bin = requireHarness("pi");

type SeatRow = { id: string; name: string; inputCapabilities: { deliveryModes: string[] }; cannotWork?: unknown };

describe.runIf(bin)("a Pi seat that cannot take a turn (no API key)", () => {
  let mock: MockAnthropicServer;
  let fleet: WorkerReportFleet;
  let pane: PiPane | undefined;
  let seat: SeatRow;

  beforeAll(async () => {
    assertBuilt();
    mock = await startMockAnthropicServer();
    const store = await prepareWorkerReportStore();
    pane = startPiPane({
      bin: bin!,
      root: join(store.stateDir, "pi-seat"),
      mockUrl: mock.url,
      agentStateDir: store.agentStateDir,
      workerTools: false,
      keyless: true,
    });
    fleet = await startWorkerReportFleet(store, mock, pane.tmuxSocket);
    for (let i = 0; i < 150 && !seat; i++) {
      const seats = (await fleet.lead.call("list_seats", {})).structuredContent?.seats as SeatRow[];
      seat = seats.find((s) => s.id.startsWith("workbox/pi-") && s.cannotWork)!;
      if (!seat) await new Promise((r) => setTimeout(r, 200));
    }
  });
  afterAll(async () => {
    await fleet?.close();
    pane?.close();
    await mock?.close();
  });

  it("list_seats shows cannotWork with Pi's reason and offers no delivery mode", () => {
    expect(seat, "no Pi seat with cannotWork appeared").toBeDefined();
    expect(seat.cannotWork).toEqual({
      reason: "no_api_key",
      detail: expect.stringContaining("no API key for its model anthropic/claude-sonnet-4-5"),
    });
    expect(seat.inputCapabilities.deliveryModes).toEqual([]);
  });

  it("clankie seat list shows the same: modes none, and the reason", async () => {
    const json = await runCli(["seat", "list", "--json", "--state-dir", fleet.stateDir]);
    expect(json.code, json.stderr).toBe(0);
    const row = (JSON.parse(json.stdout) as { seats: Record<string, unknown>[] }).seats.find((s) => s.id === seat.id);
    expect(row).toMatchObject({ modes: "none", cannotWork: expect.stringMatching(/^no_api_key: Pi has no API key/) });
    const table = await runCli(["seat", "list", "--state-dir", fleet.stateDir]);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+KIND\s+STATUS\s+ONLINE\s+MODES\s+UNRESOLVED\s+CANNOT_WORK$/);
    expect(table.stdout).toMatch(new RegExp(`${seat.id}\\s+pi\\s+\\w+\\s+true\\s+none\\s+0\\s+no_api_key: `));
  });

  it("message_seat is refused before anything is written: seat_cannot_work, nothing reaches a model", async () => {
    const res = await fleet.lead.call("message_seat", { seat: seat.id, message: "never to a keyless Pi" });
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
      outcome: "undelivered",
      reason: "seat_cannot_work",
    });
    expect(mock.userMessagesContaining("never to a keyless Pi")).toBe(0);
  });
});
