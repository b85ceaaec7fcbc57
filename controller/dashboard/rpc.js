// The dashboard's calls: StatusService and OwnerService over Connect JSON on this origin, the
// Watch server stream, and the owner token taken from the URL fragment (never sent to the server
// as part of the URL) or the login form.
import { view } from "./common.js";

export const STATUS = "/clankie.fleet.v1.StatusService/";
export const OWNER = "/clankie.fleet.v1.OwnerService/";
const TOKEN_KEY = "clankie-owner-token";

export function takeToken() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

export const keepToken = (token) => sessionStorage.setItem(TOKEN_KEY, token);
export const forgetToken = () => sessionStorage.removeItem(TOKEN_KEY);

export class CallError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

export async function call(path, body = {}) {
  const res = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${view.token}` },
    body: JSON.stringify(body),
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new CallError(json.message || `HTTP ${res.status}`, json.code || String(res.status));
  return json;
}

/** StatusService.Watch as a Connect server stream: enveloped JSON messages, the last one flagged end-of-stream. */
export async function* watch(signal) {
  const req = new TextEncoder().encode("{}");
  const envelope = new Uint8Array(5 + req.length);
  new DataView(envelope.buffer).setUint32(1, req.length);
  envelope.set(req, 5);
  const res = await fetch(STATUS + "Watch", {
    method: "POST",
    headers: {
      "content-type": "application/connect+json",
      "connect-protocol-version": "1",
      authorization: `Bearer ${view.token}`,
    },
    body: envelope,
    signal,
  });
  if (!res.ok) {
    const json = await res.json().catch(() => ({}));
    throw new CallError(json.message || `HTTP ${res.status}`, json.code || String(res.status));
  }
  const reader = res.body.getReader();
  let buf = new Uint8Array(0);
  for (;;) {
    while (buf.length >= 5) {
      const flags = buf[0];
      const len = new DataView(buf.buffer, buf.byteOffset).getUint32(1);
      if (buf.length < 5 + len) break;
      const msg = JSON.parse(new TextDecoder().decode(buf.subarray(5, 5 + len)));
      buf = buf.slice(5 + len);
      if (flags & 2) {
        if (msg.error) throw new CallError(msg.error.message || msg.error.code, msg.error.code);
        return;
      }
      yield msg;
    }
    const { done, value } = await reader.read();
    if (done) throw new CallError("the stream ended", "unavailable");
    const next = new Uint8Array(buf.length + value.length);
    next.set(buf);
    next.set(value, buf.length);
    buf = next;
  }
}
