// Receipts: paged, filtered by seat, conversation and state, and found by id (the whole id opens
// its detail; at least its first 4 characters list the receipts that begin with them).
import { $, age, cell, fill, linkCell, view } from "./common.js";
import { call, STATUS } from "./rpc.js";
import { openDetail } from "./detail.js";

const PAGE = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ID_MIN = 4;

function filters() {
  return {
    seatId: $("f-seat").value,
    conversationId: $("f-conversation").value.trim(),
    state: $("f-state").value,
    deliveryIdPrefix: $("f-id").value.trim().toLowerCase(),
  };
}

function emptyText(f) {
  const filtered = f.seatId || f.conversationId || f.state;
  const under = filtered ? " under these filters" : "";
  if (f.deliveryIdPrefix) return `No receipt's id begins with ${f.deliveryIdPrefix}${under}.`;
  if (filtered) return "No receipt matches these filters. Clear them to see every receipt.";
  return (
    "No receipts yet. Connect a lead (the lines `clankie up` printed) and call " +
    'message_seat {"seat": "…", "message": "…"}.'
  );
}

export async function renderReceipts() {
  const f = filters();
  const short = f.deliveryIdPrefix.length > 0 && f.deliveryIdPrefix.length < ID_MIN;
  $("f-id").setCustomValidity(short ? `at least ${ID_MIN} characters of the id` : "");
  // A search too short to send lists as if it were not there, and says so beside the box.
  const query = { limit: PAGE, offset: view.offset, ...f, deliveryIdPrefix: short ? "" : f.deliveryIdPrefix };
  const res = await call(STATUS + "ListReceipts", query);
  const rows = res.receipts ?? [];
  view.total = Number(res.total ?? 0);
  fill(
    "receipts",
    rows.map((r) => [
      linkCell(r.deliveryId, () => void openDetail(r.deliveryId)),
      cell(r.seatId),
      cell(r.conversationId, "wide"),
      cell(r.state, `state-${r.state}`),
      cell(age(r.ageMs)),
      cell(r.proofAgeMs === undefined ? "" : `${r.proofAgeMs} ms`),
      cell(r.detail ?? "", "detail wide"),
    ]),
    "receipts-empty",
    emptyText(f),
  );
  const from = rows.length ? view.offset + 1 : 0;
  $("page").textContent = `${from}–${view.offset + rows.length} of ${view.total}`;
  document.querySelector(".pager").hidden = view.total === 0;
  $("prev").disabled = view.offset === 0;
  $("next").disabled = view.offset + PAGE >= view.total;
  return rows;
}

async function search() {
  view.offset = 0;
  const rows = await renderReceipts();
  const id = $("f-id").value.trim().toLowerCase();
  // The whole id: its receipt opens at once.
  if (UUID.test(id) && rows.length === 1 && rows[0].deliveryId === id) await openDetail(id);
}

export function wireReceipts() {
  const refilter = () => {
    view.offset = 0;
    void renderReceipts().catch(() => {});
  };
  $("f-seat").addEventListener("change", refilter);
  $("f-state").addEventListener("change", refilter);
  $("f-conversation").addEventListener("change", refilter);
  $("f-id").addEventListener("change", () => void search().catch(() => {}));
  $("filters").addEventListener("reset", () => setTimeout(refilter));
  $("filters").addEventListener("submit", (ev) => {
    ev.preventDefault();
    void search().catch(() => {});
  });
  $("prev").addEventListener("click", () => {
    view.offset = Math.max(0, view.offset - PAGE);
    void renderReceipts().catch(() => {});
  });
  $("next").addEventListener("click", () => {
    view.offset += PAGE;
    void renderReceipts().catch(() => {});
  });
}
