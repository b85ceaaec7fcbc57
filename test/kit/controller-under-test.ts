/**
 * A controller in this test process with an injectable clock, its lead client, owner
 * helpers, and a node agent as a real child process.
 */
import { join } from "node:path";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type RunningController } from "../../controller/main.js";
import { silentLogger } from "../../shared/logger.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { prepareStore, type Driver } from "./test-db.js";
import { startAgentProcess, type AgentProcess } from "./agent-process.js";
import { connectLead, type LeadClient } from "./mcp-client.js";
import { ownerOf } from "./owner.js";

export interface ControllerUnderTest {
  controller: RunningController;
  agent: AgentProcess;
  lead: LeadClient;
  owner: ReturnType<typeof ownerOf>;
  mailbox: MailboxStore;
  stateDir: string;
  /** Moves the controller's wall clock forward. */
  advance(ms: number): void;
  /** Waits until the seat's agent is registered and online again (after a restart). */
  waitOnline(): Promise<void>;
  close(): Promise<void>;
}

export async function startControllerUnderTest(
  driver: Driver,
  overrides: Omit<Parameters<typeof compileControllerConfig>[0], "stateDir"> = {},
  seatName = "inbox",
): Promise<ControllerUnderTest> {
  const store = await prepareStore(driver);
  let offsetMs = 0;
  const controller = await startController(
    compileControllerConfig({
      stateDir: store.stateDir,
      port: 0,
      databaseUrl: store.databaseUrl,
      heartbeatIntervalMs: 500,
      deliverTimeoutMs: 1500,
      ...overrides,
    }),
    silentLogger,
    { now: () => new Date(Date.now() + offsetMs) },
  );
  const agent = await startAgentProcess({
    controllerUrl: controller.agentUrl,
    stateDir: store.stateDir,
    machine: "box",
    joinToken: await controller.issueJoinToken("box"),
  });
  const owner = ownerOf(controller.url, controller.ownerToken);
  const waitOnline = async () => {
    for (let i = 0; i < 200; i++) {
      const m = (await owner.status.listMachines({})).machines.find((x) => x.name === "box");
      if (m?.online && Number(m.lastSeenAgeMs) < 400) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("the agent did not come back online");
  };
  await waitOnline();
  await owner.addMailbox(seatName);
  const lead = await connectLead(controller.mcpUrl, controller.leadToken);
  return {
    controller,
    agent,
    lead,
    owner,
    mailbox: new MailboxStore(join(store.stateDir, "agent", "mailboxes")),
    stateDir: store.stateDir,
    advance: (ms) => {
      offsetMs += ms;
    },
    waitOnline,
    async close() {
      await lead.close().catch(() => {});
      await agent.stop().catch(() => {});
      await controller.close();
      await store.cleanup();
    },
  };
}
