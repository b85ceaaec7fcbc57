/**
 * Whether a Codex seat could take a turn, from the app-server's own answers (issue 35):
 * `config/read` names the model the thread would use, `account/read` says whether OpenAI auth
 * is required and present. Asked once per occupant (config and login change with a new
 * process); the first inspect of an occupant pays for it, usually the hire's readiness or the
 * status watch, before any delivery. A model server that does not answer shows only in a
 * turn (Codex retries "Reconnecting... waiting for network"): the hire watches the brief's
 * turn for it (hire/not-ready.ts, launch.ts `fatalScreen`).
 */
import type { CannotWork } from "../adapter.js";
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
