/**
 * Claude Code's per-session inbox socket (cross-session messaging, 2.1.224+), as observed on
 * 2.1.332: a unix socket taking newline-delimited JSON, whose first line must be
 * `{"type":"auth","token"}` with a token the session handed its own children; then
 * `{"type":"user","message":{"role":"user","content"}}` is enqueued as a peer message. The
 * socket answers nothing: a written line proves only that the bytes left us, never that the
 * session took them (anthropics/claude-code #85503: success before the receiver decides), so
 * the adapter's verdict comes from the transcript.
 */
import { connect, type Socket } from "node:net";
import { CLANKIE_MESSAGE_TAG } from "./transcript.js";

export type InboxPush = { kind: "written" } | { kind: "not_sent"; detail: string } | { kind: "lost"; detail: string };

function open(socketPath: string, timeoutMs: number): Promise<Socket | string> {
  return new Promise((resolve) => {
    const s = connect({ path: socketPath });
    const timer = setTimeout(() => {
      s.destroy();
      resolve(`no connection to the inbox socket within ${timeoutMs} ms`);
    }, timeoutMs);
    s.once("connect", () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once("error", (e) => {
      clearTimeout(timer);
      s.destroy();
      resolve(`the inbox socket refused us: ${e.message}`);
    });
  });
}

/** Whether the session's inbox accepts a connection now; closed at once, with no byte written. */
export async function probeInbox(socketPath: string, timeoutMs: number): Promise<{ ok: boolean; detail: string }> {
  const s = await open(socketPath, timeoutMs);
  if (typeof s === "string") return { ok: false, detail: s };
  s.destroy();
  return { ok: true, detail: "the inbox socket accepts connections" };
}

/** What we write: our text inside a tag carrying our delivery id, so the transcript line can be told ours. */
export function inboxContent(deliveryId: string, text: string, meta: Record<string, string>): string {
  const attrs = Object.entries({ clankie_id: deliveryId, ...meta })
    .map(([k, v]) => ` ${k}="${v.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`)}"`)
    .join("");
  // On lines of its own, as Claude shows a channel event: the message's first line is its own.
  return `<${CLANKIE_MESSAGE_TAG}${attrs}>\n${text}\n</${CLANKIE_MESSAGE_TAG}>`;
}

/** The auth line and the message line, once. Not connected → not sent; an error after connecting → lost (may have been read). */
export async function pushInbox(
  socketPath: string,
  token: string,
  content: string,
  timeoutMs: number,
): Promise<InboxPush> {
  const s = await open(socketPath, timeoutMs);
  if (typeof s === "string") return { kind: "not_sent", detail: s };
  const lines = `${JSON.stringify({ type: "auth", token })}\n${JSON.stringify({ type: "user", message: { role: "user", content } })}\n`;
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: InboxPush) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const timer = setTimeout(() => {
      s.destroy();
      finish({ kind: "lost", detail: `the write did not finish within ${timeoutMs} ms` });
    }, timeoutMs);
    s.once("error", (e) => finish({ kind: "lost", detail: `the inbox socket failed during the write: ${e.message}` }));
    // end() flushes both lines and half-closes: Claude reads a connection's lines to its end.
    s.end(lines, () => finish({ kind: "written" }));
  });
}
