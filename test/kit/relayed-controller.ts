/**
 * A controller process whose journal's PostgreSQL (a fresh database) sits behind a relay that
 * can freeze it (test/fixtures/pg-wire-relay.ts), with one linked agent process holding a mailbox
 * seat "inbox", the owner and a lead: the common ground of the suites that kill the controller
 * while the database holds what it sent, then boot another on the same state directory.
 * PostgreSQL only. Everything started is handed to `cleanups`, to be run in reverse.
 */
import { startAgentProcess, type AgentProcess } from "./agent-process.js";
import { startControllerProcess, type ControllerProcess } from "./controller-process.js";
import { connectLead, type LeadClient } from "./mcp-client.js";
import { ownerOf } from "./owner.js";
import { freshPostgres, tempDir } from "./test-db.js";
import { until } from "./until.js";
import { startPgWireRelay, type PgWireRelay } from "../fixtures/pg-wire-relay.js";

export interface RelayedController {
  /** The database's own URL (not through the relay): what the next boot and the checks use. */
  databaseUrl: string;
  relay: PgWireRelay;
  stateDir: string;
  first: ControllerProcess;
  owner: ReturnType<typeof ownerOf>;
  agent: AgentProcess;
  agentDir: string;
  lead: LeadClient;
}

export async function startRelayedController(
  name: string,
  cleanups: (() => Promise<unknown>)[],
): Promise<RelayedController> {
  const pg = await freshPostgres();
  cleanups.push(() => pg.drop());
  const target = new URL(pg.url);
  const relay = await startPgWireRelay(target.hostname, Number(target.port || 5432));
  cleanups.push(() => (relay.thaw(), relay.close()));
  const stateDir = tempDir(`${name}-controller`);
  const first = await startControllerProcess(stateDir, relay.urlFor(pg.url));
  cleanups.push(() => first.stop());
  const owner = ownerOf(first.url, first.ownerToken);
  const agentDir = tempDir(`${name}-agent`);
  const agent = await startAgentProcess({
    controllerUrl: first.agentUrl,
    stateDir: agentDir,
    machine: `${name}box`,
    joinToken: await owner.enroll(`${name}box`),
  });
  cleanups.push(() => agent.stop());
  // The agent is linked (and its machine online) once a seat can be added through it.
  await until(
    async () =>
      await owner.addMailbox("inbox").then(
        () => true,
        () => false,
      ),
    "the mailbox seat added on the linked agent",
    200,
  );
  const lead = await connectLead(first.mcpUrl, first.leadToken);
  cleanups.push(() => lead.close());
  return { databaseUrl: pg.url, relay, stateDir, first, owner, agent, agentDir, lead };
}

/** Kills the first controller and waits until the relay has seen its connections close: only then is what they sent its to deliver (or drop) at thaw. */
export async function killFirst(c: RelayedController): Promise<void> {
  c.first.child.kill("SIGKILL");
  await new Promise((r) => c.first.child.once("exit", r));
  await until(() => c.relay.openClients() === 0, "the relay seeing the dead controller's connections close", 200);
}
