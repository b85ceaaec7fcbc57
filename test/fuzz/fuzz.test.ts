/**
 * The fuzz suite (issue 11, part 6). In `npm test`: a short, seeded, bounded slice (about
 * 1,500 inputs). With FUZZ_FULL=1 (`npm run fuzz`): at least 100,000 inputs in all, the
 * tallies written to verify/results/fuzz.json. Each target must end with 0 failures (no
 * crash, no hang, no 5xx, no unhandled status) and the service answering after every batch.
 */
import { writeFileSync, mkdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { machines } from "../../controller/db/schema.js";
import { enrollFuzzClient, reverseLinkSessions, type EnrolledClient, type ReverseLinkSessions } from "./enrolled.js";
import {
  AGENT_PORT_SERVICES,
  AGENT_SERVICES,
  CONTROLLER_SERVICES,
  ENROLLMENT_SERVICES,
  fuzzClaudeChannel,
  fuzzCodexReplies,
  fuzzMcpFraming,
  fuzzMcpToolArgs,
  fuzzOpenCodeReplies,
  fuzzProtobuf,
  type FuzzConfig,
  type FuzzTally,
} from "./properties.js";

const FULL = process.env.FUZZ_FULL === "1";
const SEED = Number(process.env.FUZZ_SEED ?? 11_011);
// Full: 25k MCP, 46k protobuf (main port, agent port over mutual TLS and without a certificate, the agent over its reverse link), 30k harness replies = 101k.
const RUNS = FULL
  ? {
      mcpFraming: 12_500,
      mcpTools: 12_500,
      controllerRpc: 20_000,
      agentPortRpc: 12_000,
      enrollmentRpc: 4_000,
      agentRpc: 10_000,
      codex: 10_000,
      opencode: 10_000,
      claude: 10_000,
    }
  : {
      mcpFraming: 200,
      mcpTools: 200,
      controllerRpc: 300,
      agentPortRpc: 200,
      enrollmentRpc: 100,
      agentRpc: 200,
      codex: 100,
      opencode: 200,
      claude: 200,
    };
const cfg = (runs: number): FuzzConfig => ({ seed: SEED, runs, batch: FULL ? 1_000 : 200 });
const TIMEOUT = FULL ? 3_600_000 : 120_000;

describe("fuzz", () => {
  let fleet: TestFleet;
  let enrolled: EnrolledClient;
  let reverse: ReverseLinkSessions;
  const tallies: FuzzTally[] = [];
  const started = Date.now();

  beforeAll(async () => {
    fleet = await startFleet("pglite", { mcpSessionsPerConversation: 16 });
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("inbox");
    enrolled = await enrollFuzzClient(fleet.controller, "fuzzbox");
    reverse = await reverseLinkSessions(fleet.controller);
  });
  afterAll(async () => {
    enrolled?.close();
    await reverse?.close();
    await fleet?.close();
    // FUZZ_OUT writes the tallies of any run (the slice too) elsewhere; the full run's go to verify/results/fuzz.json.
    const out = process.env.FUZZ_OUT ?? (FULL ? "verify/results/fuzz.json" : undefined);
    if (out) {
      mkdirSync("verify/results", { recursive: true });
      const total = tallies.reduce((n, t) => n + t.inputs, 0);
      writeFileSync(
        out,
        JSON.stringify(
          {
            seed: SEED,
            inputs: total,
            failures: tallies.flatMap((t) => t.failures),
            seconds: Math.round((Date.now() - started) / 1000),
            targets: tallies.map((t) => ({
              target: t.target,
              inputs: t.inputs,
              failures: t.failures.length,
              ...(t.statuses ? { grpcStatuses: t.statuses } : {}),
            })),
            finishedAt: new Date().toISOString(),
          },
          null,
          2,
        ) + "\n",
      );
    }
  });

  const healthy = async () => {
    const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    try {
      const r = await lead.call("list_seats", {});
      if (r.isError) throw new Error("list_seats failed after the batch");
      const sent = await lead.call("message_seat", {
        seat: "inbox",
        message: `still answering ${Date.now()} ${Math.random()}`,
      });
      // Still answering: a typed answer (delivered, or a definite refusal such as proof_stale when the machine is loaded).
      if (
        typeof sent.structuredContent?.outcome !== "string" ||
        !["delivered", "undelivered"].includes(sent.structuredContent.outcome as string)
      )
        throw new Error(`a real delivery after the batch: ${JSON.stringify(sent.structuredContent)}`);
    } finally {
      await lead.close();
    }
  };
  const run = async (p: Promise<FuzzTally>) => {
    const t = await p;
    tallies.push(t);
    expect(t.failures).toEqual([]);
    expect(t.inputs).toBeGreaterThan(0);
  };

  it("MCP JSON-RPC framing", { timeout: TIMEOUT }, () =>
    run(
      fuzzMcpFraming(
        { mcpUrl: fleet.controller.mcpUrl, token: fleet.controller.leadToken, healthy },
        cfg(RUNS.mcpFraming),
      ),
    ),
  );
  it("MCP tool arguments", { timeout: TIMEOUT }, () =>
    run(
      fuzzMcpToolArgs(
        { mcpUrl: fleet.controller.mcpUrl, token: fleet.controller.leadToken, healthy },
        cfg(RUNS.mcpTools),
      ),
    ),
  );
  it("protobuf frames to every service on the controller's port (owner token)", { timeout: TIMEOUT }, async () => {
    await run(
      fuzzProtobuf(
        { baseUrl: fleet.controller.url, token: fleet.controller.ownerToken, services: CONTROLLER_SERVICES, healthy },
        cfg(RUNS.controllerRpc),
      ),
    );
  });
  // Since ADR 0021 the gateway is reached only over mutual TLS: the fuzz machine enrolled as an agent does.
  it("protobuf frames to every service on the agent port (mutual TLS, an enrolled fuzz machine)", {
    timeout: TIMEOUT,
  }, async () => {
    const healthyAgentPort = async () => {
      await enrolled.heartbeat();
      await healthy();
    };
    await run(
      fuzzProtobuf(
        {
          baseUrl: fleet.controller.agentUrl,
          token: "",
          connect: () => enrolled.connect(),
          services: AGENT_PORT_SERVICES,
          healthy: healthyAgentPort,
        },
        cfg(RUNS.agentPortRpc),
      ),
    );
  });
  it("protobuf frames to EnrollmentService on the agent port (TLS without a certificate, as a joining agent)", {
    timeout: TIMEOUT,
  }, async () => {
    const healthyAgentPort = async () => {
      await enrolled.heartbeat();
      await healthy();
    };
    await run(
      fuzzProtobuf(
        {
          baseUrl: fleet.controller.agentUrl,
          token: "",
          connect: () => enrolled.connectAnonymous(),
          services: ENROLLMENT_SERVICES,
          healthy: healthyAgentPort,
        },
        cfg(RUNS.enrollmentRpc),
      ),
    );
  });
  // The agent's AgentService over the reverse link the real agent dialed, as the controller calls it.
  it("protobuf frames to the node agent's AgentService over its reverse link (agent token)", {
    timeout: TIMEOUT,
  }, async () => {
    const [m] = await fleet.controller.database.db.select().from(machines);
    await run(
      fuzzProtobuf(
        {
          baseUrl: "http://agent",
          token: m!.agentToken,
          connect: () => reverse.connect(),
          services: AGENT_SERVICES,
          healthy,
        },
        cfg(RUNS.agentRpc),
      ),
    );
  });
  it("Codex app-server replies (JSON-RPC over a real WebSocket)", { timeout: TIMEOUT }, () =>
    run(fuzzCodexReplies(cfg(RUNS.codex))),
  );
  it("OpenCode HTTP replies (JSON, SSE-shaped, cut off)", { timeout: TIMEOUT }, () =>
    run(fuzzOpenCodeReplies(cfg(RUNS.opencode))),
  );
  it("Claude channel events (lines over a real unix socket)", { timeout: TIMEOUT }, () =>
    run(fuzzClaudeChannel(cfg(RUNS.claude))),
  );
});
