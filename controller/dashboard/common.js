// What every module of the dashboard shares: the page's state, element lookup, and rendering
// helpers that only ever set text (nothing a seat, hire or receipt carries runs as HTML).
export const $ = (id) => document.getElementById(id);

export const view = {
  token: "",
  offset: 0,
  total: 0,
  last: null,
  lastAt: null,
  staleSince: null,
  detailId: null,
  detailReceipt: null,
};

export const UNRESOLVED = new Set(["uncertain", "unconfirmed", "dispatching"]);

export const words = (v, prefix) =>
  String(v ?? "")
    .replace(prefix, "")
    .toLowerCase() || "unknown";

/** An age as an operator reads it: seconds to a minute, then minutes, hours, and whole days past two days. */
export const age = (ms) => {
  const s = Number(ms ?? 0) / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${(s / 60).toFixed(1)} min`;
  return s < 172_800 ? `${(s / 3600).toFixed(1)} h` : `${Math.floor(s / 86_400)} d`;
};

/**
 * Text with a line-break opportunity after each "/" and "_", so a path or a seat id in a detail
 * wraps at its separators on a narrow screen instead of breaking inside a word. Table cells do not
 * wrap at all (dashboard.css): a table too wide scrolls in its box.
 */
export function breakable(text) {
  const frag = document.createDocumentFragment();
  for (const part of String(text ?? "").split(/(?<=[/_])/)) {
    if (frag.childNodes.length) frag.append(document.createElement("wbr"));
    frag.append(document.createTextNode(part));
  }
  return frag;
}

export function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

/** A cell holding a link-styled button (a receipt or hire id) that opens its detail. */
export function linkCell(text, onClick) {
  const td = document.createElement("td");
  const b = document.createElement("button");
  b.type = "button";
  b.className = "link";
  b.textContent = text;
  b.addEventListener("click", onClick);
  td.append(b);
  return td;
}

export function fill(tableId, rows, emptyId, emptyText) {
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

export function field(dl, name, value) {
  const dt = document.createElement("dt");
  dt.textContent = name;
  const dd = document.createElement("dd");
  dd.append(breakable(value));
  dd.dataset.field = name;
  dl.append(dt, dd);
}

/** A proof table's rows: kind, outcome, its age when the agent wrote, its detail. */
export const proofRows = (proofs) =>
  (proofs ?? []).map((p) => [
    cell(p.kind),
    cell(p.outcome, `state-${p.outcome}`),
    cell(`${p.ageAtWriteMs ?? 0} ms`),
    cell(p.detail ?? "", "detail"),
  ]);
