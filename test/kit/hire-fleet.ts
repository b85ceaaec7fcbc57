/**
 * A controller and an in-process node agent whose pane host is a private tmux server
 * (`tmux -S <temp>`), with hire options (harness binaries, launch environment), for the
 * hire_agent suites. Cleanup kills that tmux server and the processes the hires started
 * (found by their hire marker), never anything else.
 */
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { compileControllerConfig, type ControllerConfig } from "../../controller/config.js";
import { startController, type ControllerHooks, type RunningController } from "../../controller/main.js";
import { compileAgentConfig } from "../../node-agent/config.js";
import { startAgent, type RunningAgent } from "../../node-agent/main.js";
import type { HireOptions } from "../../node-agent/hire/hire.js";
import { HIRE_ENV } from "../../node-agent/hire/pane-opener.js";
import { allPids, isFailure, readEnviron, readStat } from "../../node-agent/proofs/linux-read.js";
import { silentLogger } from "../../shared/logger.js";
import { prepareStore, tempDir, type Driver } from "./test-db.js";
import { connectLead, type LeadClient } from "./mcp-client.js";
import { ownerOf } from "./owner.js";

export interface HireFleet {
  controller: RunningController;
  agent: RunningAgent;
  lead: LeadClient;
  owner: ReturnType<typeof ownerOf>;
  tmuxSocket: string;
  agentStateDir: string;
  stateDir: string;
  /** Every tmux pane on the private server with its hire marker. */
  panes(): { paneId: string; hire: string; dead: boolean }[];
  /** Processes carrying a hire marker (any, or this hire's). */
  markedProcesses(hireId?: string): number[];
  /** This hire's launches: its pane processes and the agent's sidecars, not the harness's own helpers. */
  launchedRoots(hireId: string): number[];
  leadFor(conversationId: string): Promise<LeadClient>;
  restartAgent(): Promise<RunningAgent>;
  /** A new controller process-equivalent on the same state dir, database and port (its agent re-registers). */
  restartController(): Promise<RunningController>;
  close(): Promise<void>;
}

export async function startHireFleet(
  driver: Driver,
  o: {
    hire?: HireOptions;
    controller?: Partial<ControllerConfig>;
    statusRefreshMs?: number;
    herdrSocket?: string;
    hooks?: ControllerHooks;
  } = {},
): Promise<HireFleet> {
  const store = await prepareStore(driver);
  const controllerConfig = compileControllerConfig({
    stateDir: store.stateDir,
    port: 0,
    databaseUrl: store.databaseUrl,
    heartbeatIntervalMs: 1000,
    ...o.controller,
  });
  let controller = await startController(controllerConfig, silentLogger, o.hooks);
  const tmuxDir = tempDir("hire-tmux");
  const tmuxSocket = join(tmuxDir, "tmux.sock");
  const agentStateDir = join(store.stateDir, "agent");
  const config = compileAgentConfig({
    stateDir: agentStateDir,
    // Enrolled as a real fleet machine: mutual TLS to the agent port, hires ride its reverse link.
    controllerUrl: controller.agentUrl,
    machine: "testbox",
    paneHost: o.herdrSocket ? "herdr" : "tmux",
    tmuxSocket,
    herdrSocket: o.herdrSocket,
    statusRefreshMs: o.statusRefreshMs ?? 500,
    hire: o.hire,
  });
  let agent = await startAgent({ ...config, joinToken: await controller.issueJoinToken("testbox") }, silentLogger);
  await agent.linked;
  const owner = ownerOf(controller.url, controller.ownerToken);
  const lead = await connectLead(controller.mcpUrl, controller.leadToken);
  const leads: LeadClient[] = [lead];
  const tmux = (...a: string[]) =>
    execFileSync("tmux", ["-S", tmuxSocket, ...a], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  // Only hires this fleet's agent journaled: never another test's processes.
  const ownHires = () => {
    try {
      return new Set(
        readdirSync(join(agentStateDir, "hires"))
          .filter((f) => f.endsWith(".json"))
          .map((f) => f.slice(0, -5)),
      );
    } catch {
      return new Set<string>();
    }
  };
  const marked = (hireId?: string) => {
    const own = ownHires();
    return allPids().filter((pid) => {
      if (pid === process.pid) return false;
      const env = readEnviron(pid);
      const v = isFailure(env) ? undefined : env.get(HIRE_ENV);
      return v !== undefined && (hireId ? v === hireId : own.has(v));
    });
  };
  return {
    get controller() {
      return controller;
    },
    get agent() {
      return agent;
    },
    lead,
    owner,
    tmuxSocket,
    agentStateDir,
    stateDir: store.stateDir,
    panes() {
      try {
        return tmux("list-panes", "-a", "-F", "#{pane_id}\t#{@clankie_hire}\t#{pane_dead}")
          .split("\n")
          .filter(Boolean)
          .map((l) => {
            const [paneId, hire, dead] = l.split("\t");
            return { paneId: paneId!, hire: hire ?? "", dead: dead === "1" };
          });
      } catch {
        return [];
      }
    },
    markedProcesses: marked,
    launchedRoots(hireId) {
      // What the hire itself started: pane processes (children of the tmux server) and the
      // agent's sidecars (children of this process, where the agent runs). Helpers the
      // harness spawns (hooks, its daemon) come and go and are not launches.
      let server = -1;
      try {
        server = Number(tmux("display-message", "-p", "#{pid}").trim());
      } catch {
        // no server
      }
      return marked(hireId)
        .filter((pid) => {
          const st = readStat(pid);
          return [server, process.pid].includes(isFailure(st) ? -2 : st.ppid);
        })
        .sort((a, b) => a - b);
    },
    async leadFor(conversationId) {
      const token = (await owner.owner.issueLeadToken({ conversationId })).token;
      const l = await connectLead(controller.mcpUrl, token);
      leads.push(l);
      return l;
    },
    async restartController() {
      await controller.close();
      // The same agent port too: the agent redials the address it enrolled with.
      controller = await startController(
        { ...controllerConfig, port: controller.port, agentPort: Number(new URL(controller.agentUrl).port) },
        silentLogger,
        o.hooks,
      );
      return controller;
    },
    async restartAgent() {
      await agent.close();
      agent = await startAgent(config, silentLogger);
      await agent.linked;
      return agent;
    },
    async close() {
      for (const l of leads) await l.close().catch(() => {});
      await agent.close().catch(() => {});
      await controller.close();
      try {
        tmux("kill-server");
      } catch {
        // no server
      }
      for (const pid of marked()) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // gone
        }
      }
      await store.cleanup();
    },
  };
}
