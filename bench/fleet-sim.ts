/**
 * The fleet simulator for the fleet_scale section (issue 36 item 1): N agent identities in a
 * few child processes. Each identity is a whole node agent started with the agent's own
 * `startAgent` (node-agent/main.ts) on its own state directory: it joins with its own join
 * token and key pair, then registers, heartbeats, reports its seats and keeps its reverse link
 * over mutual TLS with the agent's own link code, so a delivery to a simulated seat is a real
 * one (the controller calls back over the link and the agent writes the mailbox file).
 * The seats are mailbox seats made with the agent's own SeatBook and MailboxStore before the
 * agent starts (what its CreateSeat does), so they ride the registration instead of N*10
 * AddSeat round trips. This file is both halves: the parent's handle and the child's main.
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { compileAgentConfig } from "../node-agent/config.js";
import { startAgent, type RunningAgent } from "../node-agent/main.js";
import { SeatBook } from "../node-agent/seats/seat-book.js";
import { MailboxStore } from "../node-agent/mailbox/store.js";
import { SeatKind } from "../shared/verdicts.js";
import { createLogger } from "../shared/logger.js";
import { track } from "./processes.js";

export interface SimIdentity {
  machine: string;
  joinToken: string;
}

type Request =
  | { op: "add"; controllerUrl: string; identities: SimIdentity[]; seatsPerAgent: number }
  | { op: "relink"; timeoutMs: number }
  | { op: "close" };
type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

/** Where an identity keeps its state; its mailboxes are under `mailboxes/<seat>` (node-agent/config.ts). */
export function simStateDir(baseDir: string, machine: string): string {
  return join(baseDir, machine);
}

export function simSeatName(i: number): string {
  return `seat-${i}`;
}

/** The file a delivered message becomes (node-agent/mailbox/store.ts: one file per delivery id). */
export function simMailboxFile(baseDir: string, machine: string, seat: string, deliveryId: string): string {
  return join(simStateDir(baseDir, machine), "mailboxes", seat, `${deliveryId}.json`);
}

export interface JoinFailure {
  machine: string;
  error: string;
}

export interface AddResult {
  failed: JoinFailure[];
  /** Joined and started, but no reverse link within LINK_WAIT_MS (the agent keeps trying). */
  unlinked: string[];
}

export interface RelinkTimes {
  /** Wall-clock ms (Date.now) at which each identity's reverse link came back after it dropped. */
  upAtMs: Record<string, number>;
  /** Identities still without a link at the timeout. */
  missing: string[];
}

/** The parent's handle on one simulator process. */
export class SimProcess {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private stderr = "";
  readonly machines: string[] = [];

  private constructor(readonly child: ChildProcess) {
    child.on("message", (m: Reply) => {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.ok) w?.resolve(m.value);
      else w?.reject(new Error(m.error));
    });
    child.stderr?.on("data", (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-4000)));
    child.once("exit", (code, signal) => {
      for (const w of this.waiting.values())
        w.reject(new Error(`simulator exited (${code ?? signal}): ${this.stderr}`));
      this.waiting.clear();
    });
  }

  /** A child running this file's main; its state dirs live under `baseDir`. */
  static start(baseDir: string): SimProcess {
    const file = fileURLToPath(import.meta.url);
    // Compiled (npm run bench:fleet-scale) it runs as is; from the sources (vitest) through tsx.
    const execArgv = file.endsWith(".ts") ? ["--import", "tsx"] : [];
    const child = fork(file, [baseDir], {
      execArgv,
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      env: { ...process.env, DATABASE_URL: "" },
    });
    track(child);
    return new SimProcess(child);
  }

  private call<T>(req: Request): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, ...req });
    });
  }

  /**
   * Enrolls and starts these identities; resolves once each has its reverse link up, with the
   * ones whose join the controller refused (a new token may be tried: the old one may be spent).
   */
  async add(controllerUrl: string, identities: SimIdentity[], seatsPerAgent: number): Promise<AddResult> {
    const r = await this.call<AddResult>({ op: "add", controllerUrl, identities, seatsPerAgent });
    const refused = new Set(r.failed.map((f) => f.machine));
    this.machines.push(...identities.map((i) => i.machine).filter((m) => !refused.has(m)));
    return r;
  }

  /** Watches every identity's link from now on: resolves when each dropped and came back. */
  relink(timeoutMs: number): Promise<RelinkTimes> {
    return this.call({ op: "relink", timeoutMs });
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((r) => this.child.once("exit", r));
    await this.call({ op: "close" }).catch(() => {});
    const hard = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(hard);
  }
}

/** Runs `fn` over `items` with at most `limit` at once. */
async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

// Enrolling is CPU-bound (a key pair, a CSR, two TLS handshakes): a few at a time per process.
const ENROLL_CONCURRENCY = 3;
const RELINK_POLL_MS = 50;
// A started agent whose first link is not up by then is reported, so a jammed controller cannot stall the run.
const LINK_WAIT_MS = 120_000;

async function childMain(baseDir: string): Promise<void> {
  const agents = new Map<string, RunningAgent>();
  // Errors only: a restart makes every agent warn about its link, a thousand times over.
  const logger = createLogger({ level: "error", write: (line) => process.stderr.write(line + "\n") });

  const add = async (r: Extract<Request, { op: "add" }>) => {
    const failed: JoinFailure[] = [];
    const unlinked: string[] = [];
    await pool(r.identities, ENROLL_CONCURRENCY, async ({ machine, joinToken }) => {
      const stateDir = simStateDir(baseDir, machine);
      const config = compileAgentConfig({
        stateDir,
        controllerUrl: r.controllerUrl,
        machine,
        joinToken,
        paneHost: "none",
      });
      mkdirSync(config.mailboxDir, { recursive: true, mode: 0o700 });
      const book = new SeatBook(stateDir);
      const mailboxes = new MailboxStore(config.mailboxDir);
      for (let i = 0; i < r.seatsPerAgent; i++) {
        book.add(simSeatName(i), SeatKind.Mailbox, `simulated seat ${i}`);
        mailboxes.create(simSeatName(i));
      }
      let agent: RunningAgent;
      try {
        agent = await startAgent(config, logger);
      } catch (e) {
        // Joining is the only step that throws here (the link itself retries): the parent decides.
        failed.push({ machine, error: (e as Error).message });
        return;
      }
      agents.set(machine, agent);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(true), LINK_WAIT_MS)));
      if (await Promise.race([agent.linked.then(() => false), late])) unlinked.push(machine);
      clearTimeout(timer);
    });
    return { failed, unlinked };
  };

  const relink = (timeoutMs: number) =>
    new Promise<RelinkTimes>((resolve) => {
      const down = new Set<string>();
      const upAtMs: Record<string, number> = {};
      const started = Date.now();
      const timer = setInterval(() => {
        const now = Date.now();
        for (const [machine, agent] of agents) {
          if (upAtMs[machine] !== undefined) continue;
          const linked = agent.linkedUrls().length > 0;
          if (!linked) down.add(machine);
          else if (down.has(machine)) upAtMs[machine] = now;
        }
        if (Object.keys(upAtMs).length === agents.size || now - started > timeoutMs) {
          clearInterval(timer);
          resolve({ upAtMs, missing: [...agents.keys()].filter((m) => upAtMs[m] === undefined) });
        }
      }, RELINK_POLL_MS);
    });

  const close = async () => {
    await Promise.all([...agents.values()].map((a) => a.close().catch(() => {})));
    agents.clear();
  };

  process.on("message", (m: Request & { id: number }) => {
    const answer = (p: Promise<unknown>) =>
      p.then(
        (value) => process.send!({ id: m.id, ok: true, value } satisfies Reply),
        (e: unknown) => process.send!({ id: m.id, ok: false, error: (e as Error).stack ?? String(e) } satisfies Reply),
      );
    if (m.op === "add") void answer(add(m));
    else if (m.op === "relink") void answer(relink(m.timeoutMs));
    else void answer(close()).then(() => process.exit(0));
  });
  // The parent gone (killed, crashed): this process must not outlive it with a thousand links.
  process.once("disconnect", () => {
    process.stderr.write("fleet-sim: the parent is gone; closing\n");
    void close().finally(() => process.exit(0));
  });
  process.on("exit", (code) => process.stderr.write(`fleet-sim: exit ${code}\n`));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const baseDir = process.argv[2];
  if (!baseDir) throw new Error("usage: fleet-sim.js BASE_DIR (started by SimProcess.start)");
  void childMain(baseDir);
}
