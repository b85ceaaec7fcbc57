/** The words of a fence refusal: exactly what is blocked (this text, to this seat), what is not, and what lifts it. */
export function fenceRefusal(seatId: string, originalId: string, originalState: string): string {
  const scope =
    `refused, nothing was sent: this text to ${seatId} matches delivery ${originalId}, which is ${originalState}. ` +
    `Blocked: only this same text to ${seatId}; other messages to ${seatId}, and this text to other seats, go through. `;
  if (originalState === "abandoned-unknown") return scope + "It stays blocked: an abandoned original may be in the seat, so its text is never resent there; word the message differently.";
  return scope + `To lift it: reconcile_seat_call {"deliveryId":"${originalId}"} (reads what the seat's session proves), or settle it with {"deliveryId":"${originalId}","settle":"not_delivered"}.`;
}
