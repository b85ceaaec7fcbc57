/**
 * One result vocabulary (controller/mcp/output-schemas.ts): the MCP client validates
 * structured content against the tool's outputSchema on error results too, so every typed
 * refusal errorResult builds must fit every lead tool's schema, as the SDK publishes it (JSON
 * Schema, unknown keys refused) and its client checks it (Ajv), both run here for real. A retryable refusal (the
 * journal unavailable, the controller stopping) carried `retryable: true`, which the plain
 * reads' strict schemas did not allow: the lead got "-32602 structured content does not
 * match" instead of journal_unavailable.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { errorResult } from "../../../../controller/mcp/tool-result.js";
import {
  acknowledgeResult,
  deliveryResult,
  hireAgentResult,
  listSeatsResult,
  reportStatusResult,
  stopTaskResult,
  workerReportsResult,
} from "../../../../controller/mcp/output-schemas.js";
import {
  InvalidArgumentError,
  JournalUnavailableError,
  ServiceStoppingError,
  UnauthenticatedError,
} from "../../../../shared/errors.js";
import { JournalNoAnswerError } from "../../../../controller/db/answer-deadline.js";
import { readFailure } from "../../../../controller/db/error-text.js";

const schemas: Record<string, z.ZodObject> = {
  message_seat: deliveryResult,
  reconcile_seat_call: deliveryResult,
  hire_agent: hireAgentResult,
  stop_task: stopTaskResult,
  list_seats: listSeatsResult,
  worker_reports: workerReportsResult,
  acknowledge_worker_reports: acknowledgeResult,
  worker_report_status: reportStatusResult,
};

const refusals = {
  journal_unavailable: new JournalUnavailableError("the receipt journal could not be read (CONNECTION_CLOSED)"),
  service_stopping: new ServiceStoppingError(),
  invalid_argument: new InvalidArgumentError("seat: must be machine/name"),
  unauthenticated: new UnauthenticatedError(),
  "a read the database never answered": readFailure(new JournalNoAnswerError(7_000)),
};

describe("typed refusals fit every lead tool's output schema", () => {
  const server = new McpServer({ name: "refusals", version: "1" });
  const client = new Client({ name: "lead", version: "1" });
  // One tool per (tool schema, refusal): it answers that refusal, as the real tool's catch does.
  const cases = Object.entries(schemas).flatMap(([tool, schema]) =>
    Object.entries(refusals).map(([name, error], i) => ({ tool, name, error, schema, id: `${tool}_${i}` })),
  );
  for (const c of cases)
    server.registerTool(c.id, { inputSchema: z.object({}).strict(), outputSchema: c.schema }, async () =>
      errorResult(c.error),
    );
  beforeAll(async () => {
    const [a, b] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(a), client.connect(b)]);
    await client.listTools();
  });
  afterAll(async () => {
    await client.close();
    await server.close();
  });

  for (const c of cases) {
    it(`${c.tool}: ${c.name}`, async () => {
      const result = await client.callTool({ name: c.id, arguments: {} });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ schemaVersion: 1, dispatched: false });
    });
  }

  it("a read the database never answered is journal_unavailable, retryable, and says why", () => {
    expect(errorResult(readFailure(new JournalNoAnswerError(7_000))).structuredContent).toMatchObject({
      outcome: "unavailable",
      reason: "journal_unavailable",
      retryable: true,
      dispatched: false,
      detail: expect.stringMatching(
        /^the receipt journal could not be read \(the database sent no answer in time \(JOURNAL_NO_ANSWER\)\)/,
      ),
    });
  });

  it("an error that is not the database's is left as it is", () => {
    const bug = new TypeError("x is undefined");
    expect(readFailure(bug)).toBe(bug);
  });
});
