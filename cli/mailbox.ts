/** `clankie mailbox read NAME` and `clankie mailbox mcp NAME`: the worker's side of a mailbox seat. */
import { join } from "node:path";
import { FleetError, ErrorCode, InvalidArgumentError } from "../shared/errors.js";
import { assertValidName } from "../shared/ids.js";
import { MailboxStore } from "../node-agent/for-cli.js";
import { emit, type OutputOptions } from "./output.js";
import { visibleBlock, visibleInline } from "../shared/terminal-text.js";

function store(agentStateDir: string, name: string | undefined): { store: MailboxStore; name: string } {
  if (!name) throw new InvalidArgumentError("name the mailbox seat");
  assertValidName("seat name", name);
  const s = new MailboxStore(join(agentStateDir, "mailboxes"));
  if (!s.exists(name)) throw new FleetError(ErrorCode.UnknownSeat, `no mailbox named ${name} in ${agentStateDir}`);
  return { store: s, name };
}

export function mailboxRead(agentStateDir: string, name: string | undefined, peek: boolean, out: OutputOptions): void {
  const m = store(agentStateDir, name);
  const { entries, unreadable } = m.store.readUnread(m.name, { peek });
  const messages = entries.map((e) => ({
    deliveryId: e.deliveryId,
    seq: e.seq,
    from: e.conversationId,
    inReplyTo: e.inReplyTo,
    receivedAt: new Date(e.receivedAtMs).toISOString(),
    text: e.text,
  }));
  emit(out, { seat: m.name, messages, unreadableFiles: unreadable }, () => {
    if (messages.length === 0) return `no unread messages in ${m.name}`;
    // Every field came from a sender or a file: escaped for the terminal, the text indented under its header.
    return (
      messages
        .map(
          (x) =>
            `#${x.seq} ${x.receivedAt} from ${visibleInline(x.from)} (${visibleInline(x.deliveryId)})${x.inReplyTo ? ` in reply to ${visibleInline(x.inReplyTo)}` : ""}\n${visibleBlock(x.text)}`,
        )
        .join("\n\n") +
      (unreadable.length
        ? `\n\n(${unreadable.length} unreadable file(s): ${unreadable.map(visibleInline).join(", ")})`
        : "")
    );
  });
}

export async function mailboxMcp(agentStateDir: string, name: string | undefined): Promise<void> {
  if (!name) throw new InvalidArgumentError("name the mailbox seat");
  assertValidName("seat name", name);
  const { serveMailboxMcp } = await import("../worker/mailbox-mcp.js");
  await serveMailboxMcp(join(agentStateDir, "mailboxes"), name, join(agentStateDir, "outbox"));
}
