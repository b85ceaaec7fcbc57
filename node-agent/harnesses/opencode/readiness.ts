/**
 * Whether an OpenCode seat could take a turn, from the server's own answers (issue 35).
 * Observed on the pinned 1.18.33: a turn whose model's provider has no key fails at once with
 * "ProviderModelNotFoundError: Model not found: anthropic/…" (a `session.error` event) and the
 * session reads idle again, with no assistant message; a provider whose server does not answer
 * leaves the turn in `/session/status` `{type: "retry", message: "Cannot connect to API: …"}`.
 * So before any turn: the model a turn would use (the session's own, `GET /api/session/:id`,
 * else the config's `model`) must belong to a provider `GET /config/providers` lists (OpenCode
 * lists only providers it has a key or login for) and be among its models. The config answer is
 * asked once per occupant (it changes with a new process); the retry status is read on every probe.
 */
import type { CannotWork } from "../adapter.js";
import { jsonBody } from "./http.js";
import type { OpenCodeCall, OpenCodeProbe } from "./probe.js";
import type { OpenCodeControl } from "./control.js";

/** OpenCode's own words for a provider it cannot reach (its retry status message). */
const UNREACHABLE = /Cannot connect to API|Unable to connect|ECONNREFUSED|ENOTFOUND/;

/** A turn OpenCode is retrying because its model server does not answer; undefined otherwise. */
export function openCodeRetryCannotWork(p: OpenCodeProbe): CannotWork | undefined {
  if (!p.ok || !p.v1Retry || !UNREACHABLE.test(p.v1Retry.message)) return undefined;
  return {
    reason: "model_unreachable",
    detail: `OpenCode's /session/status: retry attempt ${p.v1Retry.attempt}, "${p.v1Retry.message}"`,
  };
}

type Providers = { providers?: { id?: unknown; models?: Record<string, unknown> }[] };

/** What the server answered; undefined when it could not be asked (never a verdict). */
export async function askOpenCodeReadiness(
  call: OpenCodeCall,
  control: OpenCodeControl,
  query: string,
): Promise<CannotWork | null | undefined> {
  let model: string | undefined;
  const session = await call("GET", `/api/session/${encodeURIComponent(control.sessionId)}`);
  if (session.kind === "answered" && session.status === 200) {
    const m = jsonBody<{ data?: { model?: { providerID?: unknown; id?: unknown } } }>(session)?.data?.model;
    if (typeof m?.providerID === "string" && typeof m.id === "string") model = `${m.providerID}/${m.id}`;
  }
  if (!model) {
    const config = await call("GET", `/config${query}`);
    if (config.kind !== "answered" || config.status !== 200) return undefined;
    const named = jsonBody<{ model?: unknown }>(config)?.model;
    if (typeof named === "string" && named.includes("/")) model = named;
  }
  const listed = await call("GET", `/config/providers${query}`);
  if (listed.kind !== "answered" || listed.status !== 200) return undefined;
  const providers = jsonBody<Providers>(listed)?.providers;
  if (!Array.isArray(providers)) return undefined;
  const ids = providers.map((p) => String(p.id));
  if (!model) {
    return ids.length
      ? null
      : { reason: "no_model", detail: "OpenCode's /config/providers lists no provider and no model is configured" };
  }
  const [providerId, ...rest] = model.split("/");
  const modelId = rest.join("/");
  const provider = providers.find((p) => p.id === providerId);
  if (!provider)
    return {
      reason: "no_api_key",
      detail: `OpenCode's /config/providers lists no provider ${providerId} (it lists ${ids.join(", ") || "none"}): model ${model} has no key or login`,
    };
  if (!provider.models || !(modelId in provider.models))
    return {
      reason: "no_model",
      detail: `OpenCode's /config/providers: provider ${providerId} has no model ${modelId}`,
    };
  return null;
}

/** One answer per occupant, kept while it holds the seat. */
export class OpenCodeReadiness {
  private readonly known = new Map<string, CannotWork | null>();

  has(occupantId: string): boolean {
    return this.known.has(occupantId);
  }

  async check(
    occupantId: string,
    call: OpenCodeCall,
    control: OpenCodeControl,
    query: string,
  ): Promise<CannotWork | undefined> {
    if (!this.known.has(occupantId)) {
      const answer = await askOpenCodeReadiness(call, control, query);
      // A server that could not answer is asked again on the next inspect; an answer is kept.
      if (answer === undefined) return undefined;
      if (this.known.size >= 1000) this.known.clear();
      this.known.set(occupantId, answer);
    }
    return this.known.get(occupantId) ?? undefined;
  }
}
