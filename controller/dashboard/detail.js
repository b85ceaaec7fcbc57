// One receipt in full (proofs with their ages, fence, settlements) and the owner's actions on it,
// reconcile and settle abandoned-unknown, each behind a confirmation. An action that does not
// apply is disabled, looks it, and says why.
import { $, age, field, fill, proofRows, UNRESOLVED, view } from "./common.js";
import { call, OWNER, STATUS } from "./rpc.js";

function fenceText(f, r) {
  if (!f.present) return "No fence: this receipt settled definitely, so its text may be sent again.";
  if (!f.open) return `Resolved as ${f.disposition} (opened ${age(f.openedAgeMs)} ago).`;
  const notices = `Notices sent: ${f.noticeAttempts ?? 0}${f.noticeAcknowledged ? " (acknowledged)" : ""}.`;
  const refused = `this exact text to ${r.seatId} is refused until the receipt is reconciled or settled`;
  return `Open for ${age(f.openedAgeMs)}: ${refused}. ${notices}`;
}

function settlementText(s, r) {
  const one = (x) => `${x.disposition} by ${x.settledBy}, ${age(x.ageMs)} ago; evidence ${x.evidenceJson}`;
  if (s.length) return s.map(one).join("\n");
  if (UNRESOLVED.has(r.state)) return "Not settled: reconcile it, or settle it as abandoned-unknown.";
  return "Settled by its outcome; no owner or lead settlement.";
}

export async function openDetail(id, refresh = false) {
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
  fill("d-proofs", proofRows(d.proofs), "d-proofs-empty");
  $("d-fence").textContent = fenceText(d.fence ?? {}, r);
  $("d-settlement").textContent = settlementText(d.settlements ?? [], r);
  const unresolved = UNRESOLVED.has(r.state);
  $("a-reconcile").disabled = !unresolved;
  $("a-settle").disabled = !unresolved;
  $("a-why").textContent = unresolved ? "" : `Nothing to reconcile or settle: this receipt is ${r.state}.`;
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

export function wireDetail() {
  $("a-reconcile").addEventListener("click", () => {
    const r = view.detailReceipt;
    const text =
      `Reconcile ${r.deliveryId}? The controller reads what ${r.seatId}'s session proves ` +
      "and records it; nothing is sent.";
    confirmThen(text, "Reconcile", async () => {
      const body = { deliveryId: r.deliveryId, conversationId: r.conversationId };
      const res = await call(OWNER + "ReconcileDelivery", body);
      return `Reconciled: ${res.outcome}. ${res.detail ?? ""}`;
    });
  });
  $("a-settle").addEventListener("click", () => {
    const r = view.detailReceipt;
    const text =
      `Settle ${r.deliveryId} as abandoned-unknown? It is kept as evidence, never resent, ` +
      `and its text stays refused to ${r.seatId}. This cannot be undone.`;
    confirmThen(text, "Settle abandoned-unknown", async () => {
      const body = { deliveryId: r.deliveryId, conversationId: r.conversationId, disposition: "abandoned-unknown" };
      const res = await call(OWNER + "SettleSeatDelivery", body);
      return `Settled: ${res.state}. ${res.detail ?? ""}`;
    });
  });
}
