/**
 * The named faults of the verification run. Each one does its damage, waits, and heals;
 * the run applies them in turn while the leads keep calling.
 * - kill-controller: SIGKILL the controller, restart it on the same port and journal.
 * - kill-agent: SIGKILL the node agent, restart it on the same state dir and port.
 * - pause-agent: SIGSTOP the agent (calls to it hang), SIGCONT after a while.
 * - database-restart: crash the private PostgreSQL (SIGKILL) and start it again.
 * - pause-database: SIGSTOP the whole private PostgreSQL, past the controller's answer deadline
 *   (ADR 0033: statement timeout + 2 s = 7 s), then SIGCONT: what it held runs late, admissions
 *   among it, which the controller must settle not sent and never dispatch.
 * - partition: cut the agent link both ways at the relay it runs through (link-relay.ts): the
 *   agent's gateway calls and its reverse link, which carries every controller-to-agent call,
 *   both dial the advertised agent URL, which is the relay.
 */
import type { Managed } from "./processes.js";
import type { PgCluster } from "./pg-cluster.js";
import type { LinkRelay } from "./link-relay.js";

export const NEMESES = [
  "kill-controller",
  "kill-agent",
  "pause-agent",
  "database-restart",
  "partition",
  "pause-database",
] as const;
export type NemesisName = (typeof NEMESES)[number];
/**
 * The order they strike in, round and round. A partition right after a database restart met no
 * calls while the journal still sat out postgres.js's reconnect backoff after a restart (fixed by
 * ADR 0032), so it follows kill-agent, after which calls flow again at once.
 */
export const SCHEDULE: readonly NemesisName[] = [
  "kill-controller",
  "database-restart",
  "kill-agent",
  "partition",
  "pause-agent",
  "pause-database",
];
/** How long pause-database holds the server: past the 7 s answer deadline, within the leads' 20 s timeout. */
export const DATABASE_PAUSE_MS = 9_000;

export type Relay = Pick<LinkRelay, "down" | "up">;

export interface Targets {
  controller: Managed;
  agent: Managed;
  pg: PgCluster;
  agentLinkRelay: Relay;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function applyNemesis(name: NemesisName, t: Targets, downMs: number): Promise<void> {
  switch (name) {
    case "kill-controller":
      await t.controller.kill();
      await sleep(downMs / 2);
      await t.controller.start();
      return;
    case "kill-agent":
      await t.agent.kill();
      await sleep(downMs / 2);
      await t.agent.start();
      return;
    case "pause-agent":
      t.agent.pause();
      await sleep(downMs);
      t.agent.resume();
      return;
    case "database-restart":
      await t.pg.crashAndRestart(downMs / 2);
      return;
    case "pause-database":
      await t.pg.pause(Math.max(downMs, DATABASE_PAUSE_MS));
      return;
    case "partition":
      await t.agentLinkRelay.down();
      try {
        await sleep(downMs);
      } finally {
        await t.agentLinkRelay.up();
      }
      return;
  }
}
