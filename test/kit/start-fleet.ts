/**
 * A controller and a node agent in this test process, on real sockets and a real
 * database, torn down by the returned `close`.
 */
import { join } from "node:path";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type ControllerHooks, type RunningController } from "../../controller/main.js";
import { compileAgentConfig } from "../../node-agent/config.js";
import { startAgent, type RunningAgent } from "../../node-agent/main.js";
import { silentLogger } from "../../shared/logger.js";
import { prepareStore, type Driver } from "./test-db.js";

export interface TestFleet {
  controller: RunningController;
  agent: RunningAgent;
  stateDir: string;
  agentStateDir: string;
  /** Starts a (new) agent process-equivalent on the same state dir. */
  restartAgent(): Promise<RunningAgent>;
  close(): Promise<void>;
}

export interface FleetOptions {
  /** Rewrites the fresh PostgreSQL URL before the controller sees it (e.g. through a fault proxy). */
  databaseUrlVia?: (url: string) => string;
  /** The controller's hooks (injected fault points, a clock). */
  hooks?: ControllerHooks;
  /** The agent's machine name; "testbox" unless a suite wants a realistic one (the dashboard's screenshots). */
  machine?: string;
}

export async function startFleet(
  driver: Driver,
  overrides: Omit<Parameters<typeof compileControllerConfig>[0], "stateDir"> = {},
  options: FleetOptions = {},
): Promise<TestFleet> {
  const store = await prepareStore(driver);
  const databaseUrl =
    store.databaseUrl && options.databaseUrlVia ? options.databaseUrlVia(store.databaseUrl) : store.databaseUrl;
  const controller = await startController(
    compileControllerConfig({
      stateDir: store.stateDir,
      port: 0,
      databaseUrl,
      heartbeatIntervalMs: 1000,
      ...overrides,
    }),
    silentLogger,
    options.hooks,
  );
  const agentStateDir = join(store.stateDir, "agent");
  // Enrolled as a real fleet machine: join token, key pair made here, mutual TLS, reverse links.
  const machine = options.machine ?? "testbox";
  const agentConfig = compileAgentConfig({ stateDir: agentStateDir, controllerUrl: controller.agentUrl, machine });
  let agent = await startAgent({ ...agentConfig, joinToken: await controller.issueJoinToken(machine) }, silentLogger);
  await agent.linked;
  const fleet: TestFleet = {
    controller,
    get agent() {
      return agent;
    },
    stateDir: store.stateDir,
    agentStateDir,
    async restartAgent() {
      await agent.close();
      agent = await startAgent(agentConfig, silentLogger);
      await agent.linked;
      return agent;
    },
    async close() {
      await agent.close().catch(() => {});
      await controller.close();
      await store.cleanup();
    },
  };
  return fleet;
}
