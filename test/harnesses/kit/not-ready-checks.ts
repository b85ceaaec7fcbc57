/** What a `not_ready` hire must leave behind (issue 35 item 1): no seat in list_seats, and a failed hire receipt. */
import { expect } from "vitest";
import { runCli } from "../../kit/cli.js";
import type { HireFleet } from "../../kit/hire-fleet.js";

/**
 * The pane is gone and discovery ran again: the agent's next seat report (on the seat book's change, or its 5 s
 * refresh behind it) leaves the controller no seat of `kind` on testbox.
 */
export async function noSeatLeft(fleet: HireFleet, kind: string): Promise<void> {
  let seats: { id: string }[] = [];
  for (let i = 0; i < 60; i++) {
    seats = (await fleet.lead.call("list_seats", {})).structuredContent?.seats as { id: string }[];
    if (!seats.some((s) => s.id.startsWith(`testbox/${kind}-`))) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(
    seats.filter((s) => s.id.startsWith(`testbox/${kind}-`)),
    JSON.stringify(seats),
  ).toEqual([]);
}

/** The hire as `hire-receipt list --state failed` shows it, if it does. */
export async function failedReceipt(fleet: HireFleet, hireId: string): Promise<Record<string, unknown> | undefined> {
  const out = await runCli(["hire-receipt", "list", "--state", "failed", "-o", "json", "--state-dir", fleet.stateDir]);
  expect(out.code, out.stderr).toBe(0);
  return (JSON.parse(out.stdout) as { hires: Record<string, unknown>[] }).hires.find((h) => h.id === hireId);
}
