/**
 * Whether a Codex seat could take a turn, from the app-server's own answers (issue 35):
 * `config/read` names the model the thread would use, `account/read` says whether OpenAI auth
 * is required and present. Asked once per occupant (config and login change with a new
 * process); the first inspect of an occupant pays for it, usually the hire's readiness or the
 * status watch, before any delivery. A model server that does not answer shows only in a
 * turn (Codex retries "Reconnecting... waiting for network"): the hire watches the brief's
 * turn for it (hire/not-ready.ts, launch.ts `fatalScreen`).
 */
import type { CannotWork, TurnFollower } from "../adapter.js";
import type { CodexConnection } from "./connection.js";

/** What the app-server answered; undefined when it could not be asked (never a verdict). */
export async function askCodexReadiness(conn: CodexConnection): Promise<CannotWork | null | undefined> {
  const config = await conn.call<{ config?: { model?: unknown; model_provider?: unknown } }>("config/read", {
    includeLayers: false,
  });
  if (!config.ok || !config.result?.config) return undefined;
  const model = config.result.config.model;
  if (typeof model !== "string" || !model)
    return { reason: "no_model", detail: "Codex's config/read names no model; a turn has nothing to run on" };
  const account = await conn.call<{ account?: unknown; requiresOpenaiAuth?: unknown }>("account/read", {
    refreshToken: false,
  });
  if (!account.ok) return undefined;
  if (account.result?.requiresOpenaiAuth === true && account.result.account == null)
    return {
      reason: "no_auth",
      detail: `Codex's account/read: model ${model} requires OpenAI auth and no account is logged in`,
    };
  return null;
}

/** One answer per occupant, kept while it holds the seat. */
export class CodexReadiness {
  private readonly known = new Map<string, CannotWork | null>();

  async check(occupantId: string, conn: CodexConnection): Promise<CannotWork | undefined> {
    if (!this.known.has(occupantId)) {
      // Asked once: an app-server that cannot answer (an older Codex) is not asked on every inspect,
      // whose proofs it would age; it then shows nothing against the seat.
      const answer = await askCodexReadiness(conn);
      if (this.known.size >= 1000) this.known.clear();
      this.known.set(occupantId, answer ?? null);
    }
    return this.known.get(occupantId) ?? undefined;
  }
}

/** How long a follower waits for the thread's rollout to exist before it gives up (the screen is still read). */
const ROLLOUT_WAIT_MS = 5_000;

/**
 * Codex's own word on the turn a write started (a hire's brief, on a fresh thread): the `error`
 * notification with `willRetry` (0.171.0 sends "Reconnecting... waiting for network" about 50 ms into
 * the turn and every ~5 s after; the TUI's screen may show it later), or the model's answer: token
 * usage reported for the thread, or an item of the turn that is not the user's message. A thread has
 * a rollout only once its first turn began, so the connection is subscribed (`thread/resume`, as the
 * question watcher does) after the write; the subscription replays the thread's token usage, so an
 * answer that came before it is still heard, and a refusal is heard at its next telling.
 */
export async function followCodexTurn(conn: CodexConnection, threadId: string): Promise<TurnFollower | undefined> {
  let refusal: CannotWork | undefined;
  let answered = false;
  const off = conn.onNotification(({ method, params }) => {
    if (params.threadId !== threadId) return;
    if (method === "error" && params.willRetry === true) {
      const e = (params.error ?? {}) as { message?: unknown; additionalDetails?: unknown };
      const why = typeof e.additionalDetails === "string" ? ` (${e.additionalDetails})` : "";
      refusal = {
        reason: "model_unreachable",
        detail: `Codex's error event for turn ${String(params.turnId)}: "${String(e.message)}"${why}`,
      };
    } else if (
      (method === "thread/tokenUsage/updated" && usedTokens(params.tokenUsage)) ||
      (method === "item/started" && !isUserMessage(params.item))
    ) {
      answered = true;
      refusal = undefined;
    }
  });
  // The rollout is written as the turn starts, a moment after the write's answer; on a loaded machine it
  // can take longer than the 2 s that 20 tries of 100 ms allowed (CI once could not follow), so the bound is a time.
  // Every refusal is tried again within it: a rollout caught half-written was refused in other words, at
  // once (CI, 61 ms), and only "no rollout found" was retried.
  const until = performance.now() + ROLLOUT_WAIT_MS;
  let subscribed = await conn.call("thread/resume", { threadId });
  while (!subscribed.ok && performance.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    subscribed = await conn.call("thread/resume", { threadId });
  }
  if (!subscribed.ok) {
    off();
    return undefined;
  }
  return { refused: () => refusal, answered: () => answered, close: off };
}

const isUserMessage = (item: unknown) =>
  typeof item === "object" && item !== null && (item as { type?: unknown }).type === "userMessage";

const usedTokens = (usage: unknown) => {
  const total = (usage as { total?: { totalTokens?: unknown } } | undefined)?.total?.totalTokens;
  return typeof total === "number" && total > 0;
};
