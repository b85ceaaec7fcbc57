/**
 * The bridge's client generations: every call in flight shares the current MCP client
 * (one session). When that session breaks, the generation is retired: new calls open the
 * next one, while calls still pending on the retired client keep it open until they finish
 * (closing it would end their answer streams after they may already have been dispatched,
 * ADR 0207 VUH-1638). A retired client is closed once its last call is done. With several
 * replicas' URLs, a session that broke on one replica moves the bridge to the next, and a new
 * session is opened at the first replica that answers (opening one dispatches nothing).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, FleetError } from "../shared/errors.js";
import type { Logger } from "../shared/logger.js";
import type { BridgeTarget } from "./target.js";
import type { PostWatch } from "./post-watch.js";
import { fetchTrusting } from "./trusting-fetch.js";

export interface Generation {
  readonly n: number;
  readonly client: Client;
  readonly sessionId: string | undefined;
  /** The replica it speaks to. */
  readonly url: string;
  pending: number;
  retired: boolean;
}

export class ControllerUnreachableError extends Error {
  override readonly name = "ControllerUnreachableError";
}

/** The controller answered and refused the lead token (HTTP 401): a cause with a fix, never "not reachable". */
export class LeadTokenRejectedError extends FleetError {
  override readonly name = "LeadTokenRejectedError";
  constructor(message: string, cause?: unknown) {
    super(ErrorCode.Unauthenticated, message, { cause });
  }
}

/** The HTTP status the SDK's transport reported (StreamableHTTPError.code), if any. */
function httpStatus(e: unknown): number | undefined {
  for (let cur: unknown = e, d = 0; cur && d < 4; cur = (cur as { cause?: unknown }).cause, d++) {
    if (cur instanceof StreamableHTTPError && typeof cur.code === "number") return cur.code;
  }
  return undefined;
}

/**
 * How long a new session may take to open while a controller is starting (the lead's first
 * tools/list waits ≤20 s, rule 54).
 */
export const CONNECT_BUDGET_MS = 20_000;
/**
 * With nothing starting, a refused connection fails within this (issue 37 item 5: it used to take
 * the whole 20 s): a few quick tries ride out a restart's gap, not a controller that is not there.
 */
export const NOTHING_STARTING_BUDGET_MS = 1_000;

function refusedOrMissing(e: unknown): boolean {
  for (let cur: unknown = e, d = 0; cur && d < 4; cur = (cur as { cause?: unknown }).cause, d++) {
    const code = (cur as { code?: unknown }).code;
    if (code === "ECONNREFUSED" || code === "ECONNRESET" || code === "UND_ERR_SOCKET") return true;
  }
  return /no controller is running/.test(String((e as Error)?.message));
}

export class Generations {
  private current: Generation | undefined;
  private opening: Promise<Generation> | undefined;
  private count = 0;
  private closed = false;

  constructor(
    private readonly target: BridgeTarget,
    private readonly watch: PostWatch,
    private readonly logger: Logger,
    private readonly version: string,
    private readonly connectBudgetMs = CONNECT_BUDGET_MS,
  ) {}

  /** The current generation with one more pending call on it; opens one if there is none. */
  async acquire(): Promise<Generation> {
    const gen = this.current && !this.current.retired ? this.current : await this.open();
    gen.pending++;
    return gen;
  }

  /** The lead-facing text for a refused token: what happened and the command that fixes it. */
  tokenRejected(status: number): string {
    return this.target.tokenRejected(status);
  }

  release(gen: Generation): void {
    gen.pending--;
    if (gen.retired && gen.pending === 0) this.closeGen(gen);
  }

  /** How many replicas' URLs the bridge can use. */
  get urlCount(): number {
    return this.target.urlCount;
  }

  /**
   * Retires a generation whose session broke; its pending calls keep it open. `moveOn`: its
   * replica failed (refused, or the answer was lost), so the next session goes to the next URL.
   */
  retire(gen: Generation, why: string, moveOn = false): void {
    if (gen.retired) return;
    gen.retired = true;
    if (this.current === gen) this.current = undefined;
    // Only if no other call has moved it already: two failures on one replica move it once.
    const moved =
      moveOn &&
      this.target.currentUrl() !== undefined &&
      new URL(this.target.currentUrl()!).toString() === gen.url &&
      this.target.failover();
    this.logger.info("session retired; the next call opens a new one", {
      generation: gen.n,
      why,
      stillPending: gen.pending,
      ...(moved ? { next: this.target.currentUrl() } : {}),
    });
    if (gen.pending === 0) this.closeGen(gen);
  }

  async close(): Promise<void> {
    this.closed = true;
    const gen = this.current;
    this.current = undefined;
    if (gen) await gen.client.close().catch(() => {});
  }

  private closeGen(gen: Generation): void {
    void gen.client.close().catch(() => {});
  }

  private open(): Promise<Generation> {
    this.opening ??= this.connect().finally(() => (this.opening = undefined));
    return this.opening;
  }

  /** Connects, waiting out a controller that is not listening yet (nothing is sent until it is). */
  private async connect(): Promise<Generation> {
    const started = Date.now();
    // The other replicas still to try before waiting (each round tries every URL once).
    let untried = this.target.urlCount - 1;
    for (let delay = 100; ; ) {
      if (this.closed) throw new ControllerUnreachableError("the bridge is closing");
      try {
        const gen = await this.connectOnce();
        this.current = gen;
        return gen;
      } catch (e) {
        if (httpStatus(e) === 401) throw new LeadTokenRejectedError(this.target.tokenRejected(401), e);
        if (untried > 0 && this.target.failover()) {
          untried--;
          this.logger.info("a replica did not open a session; trying the next", {
            error: (e as Error).message,
            next: this.target.currentUrl(),
          });
          continue;
        }
        // Read on every try: a controller may start (or die) while the bridge waits.
        const starting = this.target.controllerStarting();
        const budget = starting ? this.connectBudgetMs : Math.min(this.connectBudgetMs, NOTHING_STARTING_BUDGET_MS);
        if (!refusedOrMissing(e) || Date.now() + delay > started + budget) {
          const nothing =
            "nothing listens there and no controller is starting for it (start one with clankie up, or check --url)";
          const why = refusedOrMissing(e) && !starting ? `; ${nothing}` : "";
          const what = `could not open a session with ${this.target.describe()}: ${(e as Error).message}${why}`;
          throw new ControllerUnreachableError(what, { cause: e });
        }
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 1000);
        untried = this.target.urlCount - 1;
        this.target.failover();
      }
    }
  }

  private async connectOnce(): Promise<Generation> {
    const { url, token, ca } = this.target.resolve();
    const client = new Client({ name: "clankie-bridge", version: this.version });
    client.onerror = (e) => this.logger.debug("controller transport", { error: e.message });
    const transport = new StreamableHTTPClientTransport(url, {
      // Off loopback the controller speaks TLS under the fleet CA, which no system store holds.
      fetch: ca ? this.watch.fetchVia(fetchTrusting(ca)) : this.watch.fetch,
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      // The bridge needs no server-initiated stream; each call is judged by its own answer.
      reconnectionOptions: {
        maxRetries: 0,
        initialReconnectionDelay: 1000,
        maxReconnectionDelay: 1000,
        reconnectionDelayGrowFactor: 1,
      },
    });
    try {
      await client.connect(transport);
    } catch (e) {
      await client.close().catch(() => {});
      throw e;
    }
    const gen: Generation = {
      n: ++this.count,
      client,
      sessionId: transport.sessionId,
      url: url.toString(),
      pending: 0,
      retired: false,
    };
    this.logger.info("session opened", { generation: gen.n, url: url.toString() });
    return gen;
  }
}
