// The dashboard's script: reads the owner token from the URL fragment (never sent to the
// server) or a form, then polls StatusService over Connect JSON and renders with textContent
// only, so nothing a seat or receipt carries is ever interpreted as HTML.
const STATUS = "/clankie.fleet.v1.StatusService/";
const POLL_MS = 2000;
const $ = (id) => document.getElementById(id);

function takeToken() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem("clankie-owner-token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem("clankie-owner-token");
}

async function call(method, token, body = {}) {
  const res = await fetch(STATUS + method, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw Object.assign(new Error(json.message || `HTTP ${res.status}`), { code: json.code || String(res.status) });
  return json;
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

function fill(tableId, rows) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren(
    ...rows.map((cells) => {
      const tr = document.createElement("tr");
      tr.append(...cells);
      return tr;
    }),
  );
}

function render(machines, seats, receipts) {
  fill(
    "machines",
    machines.map((m) => [cell(m.name), cell(m.online ? "online" : "offline", m.online ? "state-online" : "state-offline"), cell(m.platform ?? ""), cell(`${age(m.lastSeenAgeMs)} ago`), cell(m.agentVersion ?? "")]),
  );
  fill(
    "seats",
    seats.map((r) => {
      const s = r.seat ?? {};
      const status = r.online ? words(s.status, "SEAT_STATUS_") : "offline";
      const caps = s.inputCapabilities ?? {};
      const modes = (caps.deliveryModes ?? []).map((d) => words(d, "DELIVERY_MODE_"));
      const accepts = [...(modes.length ? modes : ["send"]), ...(caps.interrupt ? ["stop"] : [])].join(", ");
      return [cell(r.id), cell(words(s.kind, "SEAT_KIND_")), cell(status, `state-${status}`), cell(accepts), cell(s.title ?? ""), cell(String(r.unresolvedReceipts ?? 0))];
    }),
  );
  fill(
    "receipts",
    receipts.map((r) => [
      cell(r.deliveryId),
      cell(r.seatId),
      cell(r.conversationId),
      cell(r.state, `state-${r.state}`),
      cell(age(r.ageMs)),
      cell(r.proofAgeMs === undefined ? "" : `${r.proofAgeMs} ms`),
      cell(r.detail ?? "", "detail"),
    ]),
  );
}

async function refresh(token) {
  try {
    const [m, s, r] = await Promise.all([call("ListMachines", token), call("ListSeats", token), call("ListReceipts", token, { limit: 50 })]);
    render(m.machines ?? [], s.seats ?? [], r.receipts ?? []);
    $("error").hidden = true;
    $("board").hidden = false;
    $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    return true;
  } catch (e) {
    $("error").textContent = e.code === "unauthenticated" ? "The owner token was refused." : `The controller could not be read: ${e.message}`;
    $("error").hidden = false;
    if (e.code === "unauthenticated") {
      sessionStorage.removeItem("clankie-owner-token");
      $("board").hidden = true;
      $("login").hidden = false;
      return false;
    }
    return true;
  }
}

async function start(token) {
  $("login").hidden = true;
  while (await refresh(token)) await new Promise((r) => setTimeout(r, POLL_MS));
}

$("login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const token = $("token").value.trim();
  sessionStorage.setItem("clankie-owner-token", token);
  void start(token);
});

const token = takeToken();
if (token) void start(token);
else $("login").hidden = false;
