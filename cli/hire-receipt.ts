/**
 * `clankie hire-receipt list [--all] [--state S] [--json]` and
 * `clankie hire-receipt settle ID not-launched|abandoned-unknown [--conversation C]`.
 */
import { create } from "@bufbuild/protobuf";
import {
  ListHireReceiptsRequestSchema,
  SettleHireReceiptRequestSchema,
} from "../shared/gen/clankie/fleet/v1/owner_pb.js";
import { InvalidArgumentError } from "../shared/errors.js";
import { parseUuid } from "../shared/ids.js";
import { DEFAULT_CONVERSATION, HIRE_STATES } from "../controller/for-cli.js";
import { ownerClients } from "../shared/owner-client.js";
import { emit, table, type OutputOptions } from "./output.js";

export const HIRE_RECEIPT_USAGE =
  "usage: clankie hire-receipt list | clankie hire-receipt settle ID not-launched|abandoned-unknown [--conversation C]";

const SETTLE_HINT =
  "\n(none is ever launched again; settle with: " +
  "clankie hire-receipt settle ID not-launched|abandoned-unknown [--conversation C])";

const COLUMNS = ["id", "conversation", "machine", "harness", "state", "seat", "age"];
/** Every hire's table also says why one failed or is unresolved: a failed hire's reason is the point. */
const ALL_COLUMNS = [...COLUMNS, "reason"];

export async function hireReceiptList(
  stateDir: string,
  controller: string | undefined,
  out: OutputOptions,
  all = false,
  state?: string,
): Promise<void> {
  if (state !== undefined && !HIRE_STATES.includes(state)) {
    throw new InvalidArgumentError(`--state must be one of ${HIRE_STATES.join(", ")}; got ${JSON.stringify(state)}`);
  }
  // A state filter looks at every hire: asking for failed ones must not answer "none" because they are resolved.
  const every = all || state !== undefined;
  const { owner } = ownerClients(stateDir, controller);
  const res = await owner.listHireReceipts(
    create(ListHireReceiptsRequestSchema, { includeSettled: every, state: state ?? "" }),
  );
  const rows = res.receipts.map((r) => ({
    id: r.hireId,
    conversation: r.conversationId,
    machine: r.machine,
    harness: r.harness,
    state: r.state,
    seat: r.seatId,
    ageMs: Number(r.ageMs),
    reason: r.reason,
  }));
  // --all lists settled hires too, under their own key: "unresolved" keeps meaning what it says.
  emit(out, every ? { hires: rows } : { unresolved: rows }, () =>
    rows.length === 0
      ? every
        ? state
          ? `no ${state} hires`
          : "no hires"
        : "no unresolved hires (clankie hire-receipt list --all shows every hire)"
      : table(
          rows.map((r) => ({ ...r, age: `${Math.round(r.ageMs / 1000)} s` })),
          every ? ALL_COLUMNS : COLUMNS,
        ) + (every ? "" : SETTLE_HINT),
  );
}

export async function hireReceiptSettle(
  stateDir: string,
  controller: string | undefined,
  given: string | undefined,
  disposition: string | undefined,
  conversation: string | undefined,
  out: OutputOptions,
): Promise<void> {
  if (!given || (disposition !== "not-launched" && disposition !== "abandoned-unknown"))
    throw new InvalidArgumentError(HIRE_RECEIPT_USAGE);
  // Canonical here too, so what is printed is the id as the journal holds it (issue 32 item 4).
  const id = parseUuid("ID", given);
  const { owner } = ownerClients(stateDir, controller);
  const res = await owner.settleHireReceipt(
    create(SettleHireReceiptRequestSchema, {
      hireId: id,
      conversationId: conversation ?? DEFAULT_CONVERSATION,
      disposition,
    }),
  );
  emit(out, { hireId: id, state: res.state, detail: res.detail }, () => `${id}: ${res.state} — ${res.detail}`);
  if (res.state === "refused") process.exitCode = 1;
}
