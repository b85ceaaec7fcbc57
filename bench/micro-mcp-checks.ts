/**
 * `node dist/bench/micro-mcp-checks.js [--n 20000]`: the CPU of the zod checks one
 * message_seat call passes through (issue 17 item 2: "re-created zod schemas/validators"),
 * each alone in a hot loop after a warm-up — the MCP SDK's JSON-RPC message and CallTool
 * request schemas, our tool's arguments and its output schema — and one JSON.stringify of the
 * body for scale. Prints µs per check; a hot loop is a floor, not what a busy process pays.
 */
import { parseArgs } from "node:util";
import { CallToolRequestSchema, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { deliveryResult } from "../controller/mcp/output-schemas.js";
import { messageSeatArgs } from "../controller/mcp/tools/message-seat.js";

const id = "0b7c2a9e-8c3e-4d5f-9a1b-2c3d4e5f6a7b";
const body = {
  schemaVersion: 1,
  outcome: "delivered",
  detail: "stored in the mailbox",
  deliveryId: id,
  seat: "m1/inbox",
  deliveryStage: "stored",
  nativeReceiptId: "mailbox:12",
  proofAgeMs: 3,
  proofs: [
    { kind: "authority", outcome: "ok", detail: "checked by the controller", ageAtWriteMs: 2 },
    { kind: "mailbox", outcome: "ok", detail: "exists", ageAtWriteMs: 1 },
  ],
};
const request = {
  jsonrpc: "2.0",
  id: 5,
  method: "tools/call",
  params: {
    name: "message_seat",
    arguments: { seat: "m1/inbox", message: "hello world" },
    _meta: { "clankie/seat-call": { deliveryId: id } },
  },
};

function cpuMicrosPerCall(n: number, f: () => unknown): number {
  for (let i = 0; i < 2000; i++) f();
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) f();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

const { values } = parseArgs({ options: { n: { type: "string" } } });
const n = Number(values.n ?? 20_000);
const rows: [string, () => unknown][] = [
  ["JSON-RPC message (SDK)", () => JSONRPCMessageSchema.safeParse(request)],
  ["CallTool request (SDK)", () => CallToolRequestSchema.safeParse(request)],
  ["message_seat arguments", () => messageSeatArgs.safeParse(request.params.arguments)],
  ["message_seat output schema", () => deliveryResult.safeParse(body)],
  ["JSON.stringify of the body", () => JSON.stringify(body)],
];
for (const [name, f] of rows) console.log(`${name}: ${cpuMicrosPerCall(n, f).toFixed(1)} µs`);
