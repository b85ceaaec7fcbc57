// The dashboard's script. Reads the owner token from the URL fragment (never sent to the
// server) or a form; stays live over StatusService.Watch (a Connect server stream over fetch);
// pages and filters receipts with ListReceipts; shows one receipt with GetReceipt; the owner's
// actions (reconcile, settle abandoned-unknown) go through OwnerService after a confirmation.
// Everything is rendered with textContent, so nothing a seat or receipt carries runs as HTML.
const STATUS = "/clankie.fleet.v1.StatusService/";
const OWNER = "/clankie.fleet.v1.OwnerService/";
const PAGE = 50;
// The server sends at least every 5 s; silence past this means the stream is gone.
const SILENCE_MS = 12_000;
const UNRESOLVED = new Set(["uncertain", "unconfirmed", "dispatching"]);
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";

const view = { token: "", offset: 0, total: 0, last: null, lastAt: null, staleSince: null, detailId: null };

function takeToken() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem("clankie-owner-token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem("clankie-owner-token");
}

class CallError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

async function call(path, body = {}) {
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
async function* watch(signal) {
  const req = new TextEncoder().encode("{}");
  const envelope = new Uint8Array(5 + req.length);
  new DataView(envelope.buffer).setUint32(1, req.length);
  envelope.set(req, 5);
  const res = await fetch(STATUS + "Watch", {
    method: "POST",
    headers: { "content-type": "application/connect+json", "connect-protocol-version": "1", authorization: `Bearer ${view.token}` },
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

const words = (v, prefix) => String(v ?? "").replace(prefix, "").toLowerCase() || "unknown";
const age = (ms) => {
  const s = Number(ms ?? 0) / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : s < 3600 ? `${(s / 60).toFixed(1)} min` : `${(s / 3600).toFixed(1)} h`;
};

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function fill(tableId, rows, emptyId, emptyText) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren(
    ...rows.map((cells) => {
      const tr = document.createElement("tr");
      tr.append(...cells);
      return tr;
    }),
  );
  $(tableId).hidden = rows.length === 0;
  if (emptyId) {
    $(emptyId).hidden = rows.length > 0;
    if (emptyText !== undefined) $(emptyId).textContent = emptyText;
  }
}

function renderMachines(machines) {
  const stale = view.staleSince !== null;
  fill(
    "machines",
    machines.map((m) => {
      const status = stale ? "unknown (stale)" : m.online ? "online" : "offline";
      return [cell(m.name), cell(status, stale ? "state-stale" : m.online ? "state-online" : "state-offline"), cell(m.platform ?? ""), cell(`${age(m.lastSeenAgeMs)} ago`), cell(m.agentVersion ?? "")];
    }),
    "machines-empty",
  );
}

function renderSeats(seats) {
  const stale = view.staleSince !== null;
  fill(
    "seats",
    seats.map((r) => {
      const s = r.seat ?? {};
      const status = stale ? "unknown (stale)" : r.online ? words(s.status, "SEAT_STATUS_") : "offline";
      const caps = s.inputCapabilities ?? {};
      const modes = (caps.deliveryModes ?? []).map((d) => words(d, "DELIVERY_MODE_"));
      const accepts = [...(modes.length ? modes : ["send"]), ...(caps.interrupt ? ["stop"] : [])].join(", ");
      return [cell(r.id), cell(words(s.kind, "SEAT_KIND_")), cell(status, stale ? "state-stale" : `state-${status}`), cell(accepts), cell(s.title ?? "", "wide"), cell(String(r.unresolvedReceipts ?? 0))];
    }),
    "seats-empty",
  );
  const select = $("f-seat");
  const chosen = select.value;
  select.replaceChildren(new Option("any", ""), ...seats.map((r) => new Option(r.id, r.id)));
  select.value = seats.some((r) => r.id === chosen) ? chosen : "";
}

function filters() {
  return { seatId: $("f-seat").value, conversationId: $("f-conversation").value.trim(), state: $("f-state").value };
}

async function renderReceipts() {
  const f = filters();
  const res = await call(STATUS + "ListReceipts", { limit: PAGE, offset: view.offset, ...f });
  const rows = res.receipts ?? [];
  view.total = Number(res.total ?? 0);
  const filtered = f.seatId || f.conversationId || f.state;
  const emptyText = filtered ? "No receipt matches these filters. Clear them to see every receipt." : 'No receipts yet. Connect a lead (the lines `clankie up` printed) and call message_seat {"seat": "…", "message": "…"}.';
  fill(
    "receipts",
    rows.map((r) => {
      const id = document.createElement("td");
      const b = document.createElement("button");
      b.type = "button";
      b.className = "link";
      b.textContent = r.deliveryId;
      b.addEventListener("click", () => void openDetail(r.deliveryId));
      id.append(b);
      return [id, cell(r.seatId), cell(r.conversationId, "wide"), cell(r.state, `state-${r.state}`), cell(age(r.ageMs)), cell(r.proofAgeMs === undefined ? "" : `${r.proofAgeMs} ms`), cell(r.detail ?? "", "detail wide")];
    }),
    "receipts-empty",
    emptyText,
  );
  const from = rows.length ? view.offset + 1 : 0;
  $("page").textContent = `${from}–${view.offset + rows.length} of ${view.total}`;
  document.querySelector(".pager").hidden = view.total === 0;
  $("prev").disabled = view.offset === 0;
  $("next").disabled = view.offset + PAGE >= view.total;
}

const GROUPS = [
  { name: "delivered", color: "#047857", states: ["delivered", "queued", "steered", "started"] },
  { name: "unresolved", color: "#b45309", states: ["uncertain", "unconfirmed", "dispatching"] },
  { name: "not sent", color: "#b91c1c", states: ["not_sent", "rejected", "abandoned-unknown"] },
];

function svgEl(name, attrs, text) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Outcomes per minute (stacked bars) and settled latency (dots, log scale) over the receipts the watch carries. */
function renderCharts(receipts) {
  // Drawn at the boxes' real width, so labels keep their size at any screen width.
  const W = Math.max(200, Math.round($("chart-outcomes").getBoundingClientRect().width) || 300), H = 140, now = Date.now();
  const minutes = 30;
  const outcomes = $("chart-outcomes");
  outcomes.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const counts = Array.from({ length: minutes }, () => GROUPS.map(() => 0));
  for (const r of receipts) {
    const m = Math.floor((now - Number(r.createdAtUnixMs ?? 0)) / 60_000);
    const g = GROUPS.findIndex((x) => x.states.includes(r.state));
    if (m >= 0 && m < minutes && g >= 0) counts[minutes - 1 - m][g]++;
  }
  const max = Math.max(1, ...counts.map((c) => c.reduce((a, b) => a + b, 0)));
  const bw = W / minutes;
  const bars = [];
  counts.forEach((c, i) => {
    let y = H - 14;
    c.forEach((n, g) => {
      if (!n) return;
      const h = (n / max) * (H - 24);
      y -= h;
      const rect = svgEl("rect", { x: i * bw + 1, y, width: bw - 2, height: h, fill: GROUPS[g].color, class: `bar bar-${GROUPS[g].name.replace(" ", "-")}` });
      rect.append(svgEl("title", {}, `${n} ${GROUPS[g].name}, ${minutes - 1 - i} min ago`));
      bars.push(rect);
    });
  });
  outcomes.replaceChildren(svgEl("text", { x: 0, y: H - 2, "font-size": 9, fill: "#6b7280" }, `${minutes} min ago`), svgEl("text", { x: W - 20, y: H - 2, "font-size": 9, fill: "#6b7280" }, "now"), svgEl("text", { x: 0, y: 9, "font-size": 9, fill: "#6b7280" }, `max ${max}/min`), ...bars);
  const legend = $("legend-outcomes");
  legend.replaceChildren(
    document.createTextNode("receipts per minute:"),
    ...GROUPS.flatMap((g) => {
      const sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = g.color;
      return [sw, document.createTextNode(g.name)];
    }),
  );

  const latency = $("chart-latency");
  latency.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const settled = receipts.filter((r) => Number(r.latencyMs ?? 0) > 0);
  const lo = 1, hi = Math.max(10, ...settled.map((r) => Number(r.latencyMs)));
  const yOf = (ms) => H - 14 - (Math.log10(Math.max(lo, ms)) / Math.log10(hi)) * (H - 24);
  const span = minutes * 60_000;
  const dots = settled.map((r) => {
    const x = W - ((now - Number(r.createdAtUnixMs)) / span) * W;
    const dot = svgEl("circle", { cx: Math.max(2, Math.min(W - 2, x)), cy: yOf(Number(r.latencyMs)), r: 2.5, fill: GROUPS.find((g) => g.states.includes(r.state))?.color ?? "#374151", class: "dot" });
    dot.append(svgEl("title", {}, `${r.latencyMs} ms (${r.state})`));
    return dot;
  });
  latency.replaceChildren(
    svgEl("text", { x: 0, y: 9, "font-size": 9, fill: "#6b7280" }, `${hi} ms`),
    svgEl("text", { x: 0, y: H - 16, "font-size": 9, fill: "#6b7280" }, "1 ms"),
    svgEl("text", { x: 0, y: H - 2, "font-size": 9, fill: "#6b7280" }, `${minutes} min ago`),
    ...(dots.length ? dots : [svgEl("text", { x: W / 2 - 60, y: H / 2, "font-size": 11, fill: "#6b7280", class: "chart-empty" }, "no settled delivery yet")]),
  );
}

function setStale(since) {
  view.staleSince = since;
  document.body.classList.toggle("is-stale", since !== null);
  $("stale").hidden = since === null;
  $("stale").textContent = since === null ? "" : `Stale since ${since.toLocaleTimeString()}: the controller stopped answering. Showing the last data it sent; reconnecting…`;
  $("live").classList.toggle("on", since === null);
  // The header must not say "live" under a stale banner.
  if (since !== null) $("live").textContent = `not live: last update ${view.lastAt ? view.lastAt.toLocaleTimeString() : "never"}`;
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
  renderCharts(msg.receipts ?? []);
  $("conversations").replaceChildren(...[...new Set((msg.receipts ?? []).map((r) => r.conversationId))].map((c) => new Option(c, c)));
  await renderReceipts();
  view.lastAt = new Date();
  $("live").textContent = `live, updated ${view.lastAt.toLocaleTimeString()}`;
  if (view.detailId && $("detail").open) await openDetail(view.detailId, true);
}

function showRefused() {
  sessionStorage.removeItem("clankie-owner-token");
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

function field(dl, name, value) {
  const dt = document.createElement("dt");
  dt.textContent = name;
  const dd = document.createElement("dd");
  dd.textContent = value;
  dd.dataset.field = name;
  dl.append(dt, dd);
}

async function openDetail(id, refresh = false) {
  view.detailId = id;
  const d = await call(STATUS + "GetReceipt", { deliveryId: id });
  const r = d.receipt ?? {};
  $("d-title").textContent = `Receipt ${r.deliveryId}`;
  const dl = $("d-fields");
  dl.replaceChildren();
  field(dl, "state", r.state);
  if (d.reason) field(dl, "reason", d.reason);
  field(dl, "seat", r.seatId);
  field(dl, "conversation", r.conversationId);
  field(dl, "written", `${age(r.ageMs)} ago`);
  field(dl, "latency", Number(r.latencyMs ?? 0) ? `${r.latencyMs} ms` : "not settled");
  if (r.nativeReceiptId) field(dl, "native receipt", r.nativeReceiptId);
  if (r.nativeMessageId) field(dl, "native message", r.nativeMessageId);
  if (r.nativeSessionPath) field(dl, "native session", r.nativeSessionPath);
  field(dl, "detail", r.detail ?? "");
  fill("d-proofs", (d.proofs ?? []).map((p) => [cell(p.kind), cell(p.outcome), cell(`${p.ageAtWriteMs ?? 0} ms`), cell(p.detail ?? "", "detail")]), "d-proofs-empty");
  const f = d.fence ?? {};
  $("d-fence").textContent = !f.present
    ? "No fence: this receipt settled definitely, so its text may be sent again."
    : f.open
      ? `Open for ${age(f.openedAgeMs)}: this exact text to ${r.seatId} is refused until the receipt is reconciled or settled. Notices sent: ${f.noticeAttempts ?? 0}${f.noticeAcknowledged ? " (acknowledged)" : ""}.`
      : `Resolved as ${f.disposition} (opened ${age(f.openedAgeMs)} ago).`;
  const s = d.settlements ?? [];
  $("d-settlement").textContent = s.length ? s.map((x) => `${x.disposition} by ${x.settledBy}, ${age(x.ageMs)} ago; evidence ${x.evidenceJson}`).join("\n") : UNRESOLVED.has(r.state) ? "Not settled: reconcile it, or settle it as abandoned-unknown." : "Settled by its outcome; no owner or lead settlement.";
  const unresolved = UNRESOLVED.has(r.state);
  $("a-reconcile").disabled = !unresolved;
  $("a-settle").disabled = !unresolved;
  if (!refresh) {
    $("d-result").textContent = "";
    $("confirm").hidden = true;
    if (!$("detail").open) $("detail").showModal();
  }
  view.detailReceipt = r;
}

function confirmThen(text, yes, action) {
  $("confirm-text").textContent = text;
  $("confirm-yes").textContent = yes;
  $("confirm").hidden = false;
  $("confirm-yes").onclick = async () => {
    $("confirm").hidden = true;
    try {
      $("d-result").textContent = await action();
    } catch (e) {
      $("d-result").textContent = `Refused: ${e.message}`;
    }
    await openDetail(view.detailId, true).catch(() => {});
  };
  $("confirm-no").onclick = () => {
    $("confirm").hidden = true;
    $("d-result").textContent = "Cancelled; nothing was changed.";
  };
}

$("a-reconcile").addEventListener("click", () => {
  const r = view.detailReceipt;
  confirmThen(`Reconcile ${r.deliveryId}? The controller reads what ${r.seatId}'s session proves and records it; nothing is sent.`, "Reconcile", async () => {
    const res = await call(OWNER + "ReconcileDelivery", { deliveryId: r.deliveryId, conversationId: r.conversationId });
    return `Reconciled: ${res.outcome}. ${res.detail ?? ""}`;
  });
});
$("a-settle").addEventListener("click", () => {
  const r = view.detailReceipt;
  confirmThen(`Settle ${r.deliveryId} as abandoned-unknown? It is kept as evidence, never resent, and its text stays refused to ${r.seatId}. This cannot be undone.`, "Settle abandoned-unknown", async () => {
    const res = await call(OWNER + "SettleSeatDelivery", { deliveryId: r.deliveryId, conversationId: r.conversationId, disposition: "abandoned-unknown" });
    return `Settled: ${res.state}. ${res.detail ?? ""}`;
  });
});

const refilter = () => {
  view.offset = 0;
  void renderReceipts().catch(() => {});
};
$("f-seat").addEventListener("change", refilter);
$("f-state").addEventListener("change", refilter);
$("f-conversation").addEventListener("change", refilter);
$("filters").addEventListener("reset", () => setTimeout(refilter));
$("filters").addEventListener("submit", (ev) => {
  ev.preventDefault();
  refilter();
});
$("prev").addEventListener("click", () => {
  view.offset = Math.max(0, view.offset - PAGE);
  void renderReceipts().catch(() => {});
});
$("next").addEventListener("click", () => {
  view.offset += PAGE;
  void renderReceipts().catch(() => {});
});

function start(token) {
  view.token = token;
  $("login").hidden = true;
  void live();
}

$("login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const token = $("token").value.trim();
  sessionStorage.setItem("clankie-owner-token", token);
  start(token);
});

const token = takeToken();
if (token) start(token);
else $("login").hidden = false;
