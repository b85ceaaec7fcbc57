/**
 * Text a lead or worker gives to be delivered must arrive exactly as given, or be refused
 * (issue 32 item 7). A lone UTF-16 surrogate cannot be encoded as UTF-8: JSON and every
 * harness write would turn it into U+FFFD, so the worker would read other text than was sent.
 * Such text is refused before admission with its own reason, `invalid_text`.
 */
import { ErrorCode, FleetError } from "./errors.js";

export const INVALID_TEXT = "invalid_text";

/** An invalid_argument error whose reason in a lead's result is the more precise `invalid_text`. */
export class InvalidTextError extends FleetError {
  override readonly name = "InvalidTextError";
  readonly reason = INVALID_TEXT;
  constructor(message: string) {
    super(ErrorCode.InvalidArgument, message);
  }
}

// Node 20 has String.prototype.isWellFormed (ES2024); the project's lib is ES2022.
type Es2024String = string & { isWellFormed(): boolean };

export function isWellFormedText(value: string): boolean {
  return (value as Es2024String).isWellFormed();
}

/** Refuses `value` unless every UTF-16 unit encodes: the write would change it otherwise. */
export function assertWellFormedText(what: string, value: string): void {
  if (isWellFormedText(value)) return;
  const at = [...value].findIndex((c) => !isWellFormedText(c));
  const why = `holds a lone UTF-16 surrogate (code point ${at + 1}), which cannot be delivered as written`;
  throw new InvalidTextError(`${what} ${why}; nothing was sent`);
}

/** Why the journal could not keep `value` exactly (a lone surrogate, a NUL), or undefined when it can. */
export function journalTextProblem(value: string): string | undefined {
  if (!isWellFormedText(value)) return "the text holds a lone UTF-16 surrogate, which cannot be delivered as written";
  if (value.includes("\u0000")) return "the text holds a NUL byte, which the journal cannot store";
  return undefined;
}

/**
 * Text the journal stores as it is (a worker's report, a reply's reference): well formed, and
 * no NUL, which PostgreSQL cannot store.
 */
export function assertJournalText(what: string, value: string): void {
  assertWellFormedText(what, value);
  if (value.includes("\u0000")) {
    throw new InvalidTextError(`${what} holds a NUL byte, which the journal cannot store; nothing was sent`);
  }
}
