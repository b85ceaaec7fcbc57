/**
 * The Codex thread a worker tool call came from (ADR 0050 addendum, issue 13 part 2). Codex
 * 0.169 sends every MCP `tools/call` with `_meta.threadId` (and the same id in
 * `_meta["x-codex-turn-metadata"].thread_id`), observed with a logging MCP server under the
 * real binary. A shared daemon runs one worker server per thread, all under the pane whose
 * TUI started it, so the agent needs this id to tell which seat's thread is calling
 * (node-agent/worker-link/worker-attribution.ts). The id is carried on every request the call makes to
 * the agent; it is only ever compared with a seat's proven thread, never trusted alone.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";

const current = new AsyncLocalStorage<string | undefined>();
const THREAD = /^[A-Za-z0-9-]{1,100}$/;

/** The thread id in a call's `_meta`, when it is one. */
export function codexThreadOf(meta: unknown): string | undefined {
  if (typeof meta !== "object" || meta === null) return undefined;
  const m = meta as { threadId?: unknown; "x-codex-turn-metadata"?: { thread_id?: unknown } };
  const id = typeof m.threadId === "string" ? m.threadId : m["x-codex-turn-metadata"]?.thread_id;
  return typeof id === "string" && THREAD.test(id) ? id : undefined;
}

/** The agent request with the calling thread added, inside a tool call that named one. */
export function withCallThread(req: Record<string, unknown>): Record<string, unknown> {
  const t = current.getStore();
  return t ? { ...req, codexThread: t } : req;
}

/** Every tool registered from now on runs with its call's thread id in scope. */
export function scopeCallThreads(server: McpServer): void {
  type Register = (name: unknown, config: unknown, cb: (...a: unknown[]) => unknown) => unknown;
  const register = server.registerTool.bind(server) as unknown as Register;
  const wrapped: Register = (name, config, cb) =>
    register(name, config, (...args: unknown[]) => {
      const extra = args[args.length - 1] as { _meta?: unknown } | undefined;
      return current.run(codexThreadOf(extra?._meta), () => cb(...args));
    });
  (server as unknown as { registerTool: Register }).registerTool = wrapped;
}
