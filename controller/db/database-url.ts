/**
 * The journal's PostgreSQL URL as the operator wrote it, read the way postgres.js reads it:
 * one host or several (`postgres://u:p@h1:5432,h2:5433/clankie?target_session_attrs=read-write`,
 * the libpq form for a primary and its standbys). WHATWG `URL` cannot parse a host list, so
 * the log said "unparseable" for a URL that worked; here the URL is split by hand.
 */

export interface DatabaseUrlParts {
  scheme: string;
  user: string;
  hasPassword: boolean;
  /** Every host as written (`host` or `host:port`), in the order postgres.js tries them. */
  hosts: string[];
  database: string;
  params: URLSearchParams;
}

const PASSWORD_PARAMS = new Set(["password", "sslpassword"]);

/** Splits a postgres:// URL with one host or a comma-separated list; undefined when it is not one. */
export function parseDatabaseUrl(url: string): DatabaseUrlParts | undefined {
  const m = /^(postgres(?:ql)?):\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?/i.exec(url.trim());
  if (!m) return undefined;
  const [, scheme, authority, path, query] = m as unknown as [string, string, string, string, string | undefined];
  // The password may itself hold '@' when written raw: the last '@' ends the user info.
  const at = authority.lastIndexOf("@");
  const userInfo = at >= 0 ? authority.slice(0, at) : "";
  const hostList = at >= 0 ? authority.slice(at + 1) : authority;
  const colon = userInfo.indexOf(":");
  const user = safeDecode(colon >= 0 ? userInfo.slice(0, colon) : userInfo);
  const hosts = hostList.split(",").filter((h) => h.length > 0);
  return {
    scheme: scheme.toLowerCase(),
    user,
    hasPassword: colon >= 0 && userInfo.length > colon + 1,
    hosts,
    database: safeDecode(path.replace(/^\//, "")),
    params: new URLSearchParams(query ?? ""),
  };
}

/**
 * The URL for logs and the controller record: every host shown, the password (in the user
 * info or a `password=` parameter) replaced by `***`. Never throws; a string that is no
 * postgres:// URL at all is not echoed, since it may be nothing but a secret.
 */
export function redactDatabaseUrl(url: string): string {
  const p = parseDatabaseUrl(url);
  if (!p) return "(not a postgres:// URL)";
  const user = p.user ? `${encodeURIComponent(p.user)}${p.hasPassword ? ":***" : ""}@` : "";
  const params = new URLSearchParams(p.params);
  for (const k of params.keys()) if (PASSWORD_PARAMS.has(k.toLowerCase())) params.set(k, "***");
  const query = params.toString().replaceAll("%2A%2A%2A", "***");
  return `${p.scheme}://${user}${p.hosts.join(",")}/${encodeURIComponent(p.database)}${query ? `?${query}` : ""}`;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * postgres.js's option for `target_session_attrs=read-write`. postgres.js 3.4.9 decides
 * read-write from `default_transaction_read_only` alone, which a hot standby of PostgreSQL 14+
 * reports as `off` (it is read-only by recovery, not by that setting): it took the standby as
 * writable, and every write there failed "read-only" until the connection closed — also after
 * the primary was back. `primary` checks `in_hot_standby`, which is what a standby is. A primary
 * set read-only by default is then taken too; its writes fail as journal_unavailable.
 */
export function writableHostOption(url: string): { target_session_attrs?: "primary" } {
  return parseDatabaseUrl(url)?.params.get("target_session_attrs") === "read-write"
    ? { target_session_attrs: "primary" }
    : {};
}
