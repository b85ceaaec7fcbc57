/**
 * The Pi session entries both sides read: the agent, reconciling from the session file
 * (session-file.ts), and the Clankie Pi extension in the seat's TUI, which binds a delivery id
 * to Pi's entry id (worker/pi-entry-binding.ts). Here, so that the agent imports none of the
 * extension's code.
 */

/** The custom entry type that binds one delivery id to Pi's entry id (docs/adr/0008). */
export const PI_DELIVERY_ENTRY = "clankie-delivery";

export interface PiSessionEntryLike {
  type?: string;
  id?: string;
  message?: unknown;
}

/** The text of a user message as Pi's own queues compare it (text parts joined). */
export function piUserText(message: unknown): string | undefined {
  const m = message as { role?: string; content?: unknown } | undefined;
  if (m?.role !== "user") return undefined;
  if (typeof m.content === "string") return m.content;
  if (!Array.isArray(m.content)) return undefined;
  return (m.content as { type?: string; text?: string }[])
    .filter((c) => c.type === "text")
    .map((c) => c.text ?? "")
    .join("");
}
