// The dashboard's entry: takes the owner token, stays live over StatusService.Watch (a Connect
// server stream over fetch), and hands each update to the views (fleet.js, hires.js,
// charts.js, receipts.js, detail.js). A silent or dropped stream marks the page stale and
// reconnects with backoff; a refused token asks for it again and shows no data.
import { $, view } from "./common.js";
import { forgetToken, keepToken, takeToken, watch } from "./rpc.js";
import { renderMachines, renderSeats } from "./fleet.js";
import { renderHires } from "./hires.js";
import { refreshCharts, wireCharts } from "./charts.js";
import { renderReceipts, wireReceipts } from "./receipts.js";
import { openDetail, wireDetail } from "./detail.js";

// The server sends at least every 5 s; silence past this means the stream is gone.
const SILENCE_MS = 12_000;

function setStale(since) {
  view.staleSince = since;
  document.body.classList.toggle("is-stale", since !== null);
  $("stale").hidden = since === null;
  const stopped = since && `Stale since ${since.toLocaleTimeString()}: the controller stopped answering.`;
  $("stale").textContent = since === null ? "" : `${stopped} Showing the last data it sent; reconnecting…`;
  $("live").classList.toggle("on", since === null);
  // The header must not say "live" under a stale banner.
  const last = view.lastAt ? view.lastAt.toLocaleTimeString() : "never";
  if (since !== null) $("live").textContent = `not live: last update ${last}`;
  if (view.last) {
    renderMachines(view.last.machines ?? []);
    renderSeats(view.last.seats ?? []);
  }
}

async function applyUpdate(msg) {
  view.last = msg;
  if (view.staleSince !== null) setStale(null);
  renderMachines(msg.machines ?? []);
  renderSeats(msg.seats ?? []);
  renderHires(msg.hires ?? []);
  const conversations = [...new Set((msg.receipts ?? []).map((r) => r.conversationId))];
  $("conversations").replaceChildren(...conversations.map((c) => new Option(c, c)));
  await Promise.all([renderReceipts(), refreshCharts()]);
  view.lastAt = new Date();
  $("live").textContent = `live, updated ${view.lastAt.toLocaleTimeString()}`;
  if (view.detailId && $("detail").open) await openDetail(view.detailId, true);
}

function showRefused() {
  forgetToken();
  $("error").textContent = "The owner token was refused.";
  $("error").hidden = false;
  $("board").hidden = true;
  $("login").hidden = false;
}

/** Keeps the stream open; on silence or a drop marks the page stale and reconnects with backoff. */
async function live() {
  let backoff = 500;
  for (;;) {
    const abort = new AbortController();
    let timer = setTimeout(() => abort.abort(), SILENCE_MS);
    try {
      for await (const msg of watch(abort.signal)) {
        clearTimeout(timer);
        timer = setTimeout(() => abort.abort(), SILENCE_MS);
        backoff = 500;
        $("error").hidden = true;
        $("board").hidden = false;
        await applyUpdate(msg);
      }
    } catch (e) {
      if (e.code === "unauthenticated") return showRefused();
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
    if (view.staleSince === null) setStale(new Date());
    await new Promise((r) => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, 5000);
  }
}

function start(token) {
  view.token = token;
  $("login").hidden = true;
  void live();
}

wireReceipts();
wireDetail();
wireCharts();
$("login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const token = $("token").value.trim();
  keepToken(token);
  start(token);
});

const token = takeToken();
if (token) start(token);
else $("login").hidden = false;
