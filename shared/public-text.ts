/**
 * The last guard on any error text sent to a lead or an owner: text that carries a query
 * (a driver's "Failed query: … params: …", SQL keywords with quoted identifiers) is replaced
 * by a fixed sentence; the caller logs the original.
 */
const SQLISH = /failed query|params:|\b(select|insert\s+into|update|delete\s+from)\b[\s\S]*("[a-z_]+"|\bfrom\b|\bset\b|\bvalues\b)/i;

export function looksLikeSql(text: string): boolean {
  return SQLISH.test(text);
}

export function publicErrorText(text: string): string {
  return looksLikeSql(text) ? "the journal failed; details are in the controller's log" : text;
}
