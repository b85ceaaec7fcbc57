/**
 * The last guard on any error text sent to a lead or an owner: text that carries a query
 * (a driver's "Failed query: … params: …", SQL keywords with quoted identifiers) is replaced
 * by a fixed sentence; the caller logs the original. Inputs are echoed through quoteInput, so
 * a 10,000-character seat name costs an error 100 characters (issue 32 item 7).
 */
const SQLISH =
  /failed query|params:|\bSQLSTATE\b|\b(select|insert\s+into|update|delete\s+from)\b[\s\S]*("[a-z_]+"|\bfrom\b|\bset\b|\bvalues\b)/i;

/** How much of one input an error text quotes. */
export const QUOTED_INPUT_CHARS = 100;

export function looksLikeSql(text: string): boolean {
  return SQLISH.test(text);
}

export function publicErrorText(text: string): string {
  return looksLikeSql(text) ? "the journal failed; details are in the controller's log" : text;
}

/**
 * An input as an error quotes it: JSON (control characters and lone surrogates stay visible),
 * at most its first 100 characters, and its length when it was cut.
 */
export function quoteInput(value: unknown): string {
  const text = typeof value === "string" ? value : String(value);
  if (text.length <= QUOTED_INPUT_CHARS) return JSON.stringify(text);
  return `${JSON.stringify(text.slice(0, QUOTED_INPUT_CHARS))}… (${text.length} characters)`;
}
