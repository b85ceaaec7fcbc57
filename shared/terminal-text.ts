/**
 * Text from others (a lead's message, a conversation id, an agent's detail) made safe for a
 * terminal (issue 11: `mailbox read` printed escape sequences raw: clear screen, window
 * title, right-to-left override). Every control character, C1 control, bidirectional
 * override or isolate, and line/paragraph separator is shown as a visible escape
 * (`\x1b`, `\u202e`); a backslash is doubled so an escape can never be faked. `--json`
 * output never goes through here: it keeps the exact text.
 */
// C0 except tab and newline, DEL, C1, bidi marks/embeddings/overrides/isolates, ALM, line/paragraph separators, BOM.
const UNSAFE =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]/g;
const UNSAFE_ANY =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]/;

function escapeOne(ch: string): string {
  const code = ch.codePointAt(0)!;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** One line of untrusted text: newlines and tabs are escaped too, so it cannot span or fake lines. */
export function visibleInline(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\t/g, "\\t").replace(UNSAFE, escapeOne);
}

/**
 * A block of untrusted text (a message body) shown under its header: its lines keep their
 * breaks, but every line is indented by `prefix`, so a line of the text can never look
 * like a header line; controls are escaped as in `visibleInline`.
 */
export function visibleBlock(text: string, prefix = "  | "): string {
  return text
    .split(/\r\n|\n/)
    .map((line) => prefix + line.replace(/\\/g, "\\\\").replace(/\t/g, "    ").replace(UNSAFE, escapeOne))
    .join("\n");
}

export function hasUnsafeChars(text: string): boolean {
  return UNSAFE_ANY.test(text);
}
