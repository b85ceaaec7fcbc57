// Machines and seats from the watch; while the page is stale nothing claims to be online.
import { $, age, cell, fill, view, words } from "./common.js";

export function renderMachines(machines) {
  const stale = view.staleSince !== null;
  fill(
    "machines",
    machines.map((m) => {
      // A revoked machine never comes back: say so, and how to remove it, not how long ago it was seen.
      const status = m.revoked ? "revoked" : stale ? "unknown (stale)" : m.online ? "online" : "offline";
      const cls = m.revoked ? "state-revoked" : stale ? "state-stale" : m.online ? "state-online" : "state-offline";
      const seen = m.revoked ? `remove: clankie fleet remove ${m.name}` : `${age(m.lastSeenAgeMs)} ago`;
      return [cell(m.name), cell(status, cls), cell(m.platform ?? ""), cell(seen), cell(m.agentVersion ?? "")];
    }),
    "machines-empty",
  );
}

export function renderSeats(seats) {
  const stale = view.staleSince !== null;
  fill(
    "seats",
    seats.map((r) => {
      const s = r.seat ?? {};
      const status = stale ? "unknown (stale)" : r.online ? words(s.status, "SEAT_STATUS_") : "offline";
      const caps = s.inputCapabilities ?? {};
      const modes = (caps.deliveryModes ?? []).map((d) => words(d, "DELIVERY_MODE_"));
      // Exactly list_seats's deliveryModes (a seat reporting none shows none), then stop when it can be interrupted.
      const accepts = [...(modes.length ? modes : ["none"]), ...(caps.interrupt ? ["stop"] : [])].join(", ");
      return [
        cell(r.id),
        cell(words(s.kind, "SEAT_KIND_")),
        // A seat whose harness says it cannot take a turn says so, with the harness's reason (issue 35).
        s.cannotWork && !stale
          ? cell(`${status}, cannot work: ${s.cannotWork.reason} (${s.cannotWork.detail})`, "state-cannot-work")
          : cell(status, stale ? "state-stale" : `state-${status}`),
        cell(accepts),
        cell(s.title ?? "", "wide"),
        cell(String(r.unresolvedReceipts ?? 0)),
      ];
    }),
    "seats-empty",
  );
  const select = $("f-seat");
  const chosen = select.value;
  select.replaceChildren(new Option("any", ""), ...seats.map((r) => new Option(r.id, r.id)));
  select.value = seats.some((r) => r.id === chosen) ? chosen : "";
}
