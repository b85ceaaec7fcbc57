/**
 * The real harness seat of the verification run: the pinned Pi TUI in a private tmux server,
 * hired through hire_agent like any worker, its model the local mock Anthropic server. The
 * checker reads this seat's own record: Pi's session files, where every user message Pi took
 * is written once (a message reaches Pi through the Clankie extension's sendUserMessage).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../test/fixtures/mock-anthropic-server.js";
import type { SeatRecord } from "./history.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** The unique text every verify op carries; anything else in Pi's record (the brief, notices) is not an op. */
const OP_TEXT = /verify op \d+ [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

export interface PiSeat {
  readonly tmuxSocket: string;
  /** The agent's environment: the homes and PATH the hired Pi inherits through tmux. */
  readonly agentEnv: NodeJS.ProcessEnv;
  readonly mock: MockAnthropicServer;
  /** hire_agent through a lead; resolves to the hired seat's id. */
  hire(lead: Client): Promise<string>;
  /** Every op text in Pi's session files, one record per occurrence. */
  records(seat: string): SeatRecord[];
  close(): Promise<void>;
}

export function piBinary(): string | undefined {
  const bin = join(ROOT, ".harnesses/pi/node_modules/.bin/pi");
  return existsSync(bin) ? bin : undefined;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((b) =>
      b && typeof b === "object" && typeof (b as { text?: unknown }).text === "string"
        ? (b as { text: string }).text
        : "",
    )
    .join("\n");
}

function jsonlFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? jsonlFiles(join(dir, e.name)) : e.name.endsWith(".jsonl") ? [join(dir, e.name)] : [],
  );
}

export async function startPiSeat(work: string, bin: string): Promise<PiSeat> {
  const mock = await startMockAnthropicServer();
  const root = join(work, "pi");
  const home = join(root, "home");
  const agentDir = join(home, ".pi/agent");
  const cwd = join(root, "work");
  for (const d of [agentDir, cwd]) mkdirSync(d, { recursive: true });
  writeFileSync(
    join(agentDir, "models.json"),
    JSON.stringify({
      providers: {
        mock: { baseUrl: mock.url, api: "anthropic-messages", apiKey: "sk-mock", models: [{ id: "mock-model" }] },
      },
    }),
  );
  const tmuxSocket = join(work, "tmux.sock");
  const binDir = join(bin, "..");
  const agentEnv: NodeJS.ProcessEnv = {
    HOME: home,
    PI_CODING_AGENT_DIR: agentDir,
    XDG_CONFIG_HOME: join(root, "xc"),
    XDG_DATA_HOME: join(root, "xd"),
    XDG_CACHE_HOME: join(root, "xk"),
    XDG_STATE_HOME: join(root, "xs"),
    TERM: "xterm-256color",
    LANG: "C.UTF-8",
    PATH: `${binDir}:${process.env.PATH ?? "/usr/bin:/bin"}`,
  };
  return {
    tmuxSocket,
    agentEnv,
    mock,
    async hire(lead) {
      const hireId = randomUUID();
      const args = {
        harness: "pi",
        workingDirectory: cwd,
        title: "pi verify seat",
        role: "verification seat",
        brief: "verification seat: answer each message briefly",
        model: "mock/mock-model",
      };
      let body: Record<string, unknown> | undefined;
      for (let i = 0; i < 5; i++) {
        const r = (await lead.callTool(
          { name: "hire_agent", arguments: args, _meta: { "clankie/seat-call": { hireId } } },
          undefined,
          { timeout: 180_000 },
        )) as { structuredContent?: Record<string, unknown> };
        body = r.structuredContent;
        if (body?.outcome === "spawned" && typeof body.seat === "string") return body.seat;
        // The same hireId again: the hire's own answer once it is settled, never a second pane.
        await new Promise((res) => setTimeout(res, 2_000));
      }
      throw new Error(`hire_agent for the Pi seat did not spawn: ${JSON.stringify(body).slice(0, 400)}`);
    },
    records(seat) {
      const out: SeatRecord[] = [];
      for (const f of jsonlFiles(join(agentDir, "sessions"))) {
        for (const line of readFileSync(f, "utf8").split("\n")) {
          if (!line.trim()) continue;
          let e: { type?: string; message?: { role?: string; content?: unknown } };
          try {
            e = JSON.parse(line) as typeof e;
          } catch {
            continue;
          }
          if (e.type !== "message" || e.message?.role !== "user") continue;
          for (const m of textOf(e.message.content).matchAll(OP_TEXT))
            out.push({ seat, deliveryId: m[0].slice(-36), conversationId: "", text: m[0] });
        }
      }
      return out;
    },
    async close() {
      try {
        execFileSync("tmux", ["-S", tmuxSocket, "kill-server"], { stdio: "ignore" });
      } catch {
        // No server left: nothing to stop.
      }
      mock.release();
      await mock.close();
    },
  };
}
