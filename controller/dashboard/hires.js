// The hires view: each hire with its state, harness, machine, seat, pane, how the brief went in
// and how many readiness proofs held; a hire's detail shows the proofs themselves and the fix.
import { $, age, cell, field, fill, linkCell, proofRows } from "./common.js";

const short = (id) => String(id ?? "").slice(0, 8);

function readiness(h) {
  const proofs = h.readinessProofs ?? [];
  if (!proofs.length) return h.unresolved ? "unknown" : "none";
  const proven = proofs.filter((p) => p.outcome === "proven").length;
  return `${proven} of ${proofs.length} proven`;
}

export function renderHires(hires) {
  fill(
    "hires",
    hires.map((h) => {
      const id = linkCell(short(h.hireId), () => openHire(h));
      id.title = h.hireId;
      id.firstChild.setAttribute("aria-label", `hire ${h.hireId}`);
      return [
        id,
        cell(h.state, `state-${h.state}`),
        cell(h.harness),
        cell(h.machine, "wide"),
        cell(h.seatId || "none"),
        cell(h.paneId || "none", "wide"),
        cell(h.briefMechanism || "none"),
        cell(readiness(h)),
        cell(`${age(h.ageMs)} ago`),
      ];
    }),
    "hires-empty",
  );
}

export function openHire(h) {
  $("h-title").textContent = `Hire ${h.hireId}`;
  const dl = $("h-fields");
  dl.replaceChildren();
  field(dl, "state", h.state);
  if (h.reason) field(dl, "reason", h.reason);
  field(dl, "harness", h.harness);
  field(dl, "machine", h.machine);
  field(dl, "seat", h.seatId || "none proven");
  field(dl, "pane", h.paneId || "none opened");
  const brief = h.briefDeliveryId ? `${h.briefMechanism} (delivery ${h.briefDeliveryId})` : h.briefMechanism || "none";
  field(dl, "brief", brief);
  field(dl, "conversation", h.conversationId);
  field(dl, "asked", `${age(h.ageMs)} ago`);
  field(dl, "detail", h.detail || "no answer from the agent recorded");
  if (h.controlFix) field(dl, "what to do", h.controlFix);
  fill("h-proofs", proofRows(h.readinessProofs), "h-proofs-empty");
  if (!$("hire-detail").open) $("hire-detail").showModal();
}
