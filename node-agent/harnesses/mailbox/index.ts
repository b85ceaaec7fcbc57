/** Mailbox seats: an inbox on this machine the worker reads itself; nothing to discover or hire. */
import { SeatKind } from "../../../shared/verdicts.js";
import type { HarnessPlugin } from "../plugin.js";
import { MailboxAdapter } from "./adapter.js";

export const mailboxHarness: HarnessPlugin = {
  kind: SeatKind.Mailbox,
  hire: false,
  start: (s) => ({ adapter: new MailboxAdapter(s.mailboxes, s.clock) }),
};
